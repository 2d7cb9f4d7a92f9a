#include "schedule_space/gpu_limits.h"

#include <charconv>

namespace tensortune::schedule_space {

Status check_gpu_limits(const GpuKernelUsage& usage, const GpuLimits& limits) {
  auto over = [](const char* what, int64_t used, int64_t limit) {
    return Error{ErrorCode::kFailedPrecondition, std::string(what) + " = " + std::to_string(used) +
                                                     " exceeds the device's limit of " +
                                                     std::to_string(limit)};
  };
  if (usage.threads_per_block > limits.max_threads_per_block)
    return over("threads per block", usage.threads_per_block, limits.max_threads_per_block);
  static const char* const kBlockAxis[] = {"threads along x", "threads along y", "threads along z"};
  static const char* const kGridAxis[] = {"blocks along x", "blocks along y", "blocks along z"};
  for (size_t a = 0; a < 3; ++a) {
    if (usage.block[a] > limits.max_block_dims[a])
      return over(kBlockAxis[a], usage.block[a], limits.max_block_dims[a]);
    if (usage.grid[a] > limits.max_grid_dims[a])
      return over(kGridAxis[a], usage.grid[a], limits.max_grid_dims[a]);
  }
  if (usage.shared_bytes > limits.max_shared_bytes_per_block)
    return over("shared memory per block (bytes)", usage.shared_bytes,
                limits.max_shared_bytes_per_block);
  if (usage.dynamic_shared_bytes > 0 &&
      usage.shared_bytes + usage.dynamic_shared_bytes > limits.max_dynamic_shared_bytes_per_block)
    return over("static and dynamic shared memory per block (bytes)",
                usage.shared_bytes + usage.dynamic_shared_bytes,
                limits.max_dynamic_shared_bytes_per_block);
  if (usage.registers_per_thread > limits.max_registers_per_thread)
    return over("registers per thread", usage.registers_per_thread,
                limits.max_registers_per_thread);
  if (usage.registers_per_thread * usage.threads_per_block > limits.max_registers_per_block)
    return over("registers per block", usage.registers_per_thread * usage.threads_per_block,
                limits.max_registers_per_block);
  return ok_status();
}

GpuKernelUsage launch_usage(std::array<int64_t, 3> block, std::array<int64_t, 3> grid,
                            int64_t shared_bytes, int64_t dynamic_shared_bytes) {
  GpuKernelUsage u;
  u.threads_per_block = block[0] * block[1] * block[2];
  u.shared_bytes = shared_bytes;
  u.dynamic_shared_bytes = dynamic_shared_bytes;
  u.block = block;
  u.grid = grid;
  return u;
}

bool fits_universal_limits(const GpuKernelUsage& usage, int64_t accumulators) {
  return fits_limits(usage, accumulators, kUniversalGpuLimits);
}

bool fits_limits(const GpuKernelUsage& usage, int64_t accumulators, const GpuLimits& l) {
  // Called for every config a tuner considers: no error text built here.
  if (accumulators > kMaxCudaAccumulators || usage.threads_per_block > l.max_threads_per_block ||
      usage.shared_bytes > l.max_shared_bytes_per_block ||
      (usage.dynamic_shared_bytes > 0 &&
       usage.shared_bytes + usage.dynamic_shared_bytes > l.max_dynamic_shared_bytes_per_block))
    return false;
  for (size_t a = 0; a < 3; ++a)
    if (usage.block[a] > l.max_block_dims[a] || usage.grid[a] > l.max_grid_dims[a]) return false;
  return true;
}

GpuLimits limits_for_capability(int cc) {
  GpuLimits l = kUniversalGpuLimits;
  constexpr int64_t kKiB = 1024;
  switch (cc) {
    case 75:
      l.max_dynamic_shared_bytes_per_block = 64 * kKiB;
      break;
    case 80:
    case 87:
      l.max_dynamic_shared_bytes_per_block = 163 * kKiB;
      break;
    case 90:
    case 100:
    case 103:
      l.max_dynamic_shared_bytes_per_block = 227 * kKiB;
      break;
    default:  // 86, 89, 120, 121 and the unknown
      l.max_dynamic_shared_bytes_per_block = cc < 75 ? 48 * kKiB : 99 * kKiB;
      break;
  }
  return l;
}

std::string cuda_target_spec(int compute_capability) {
  return "cuda -arch=sm_" + std::to_string(compute_capability);
}

Expected<int> cuda_compute_capability(const std::string& target_spec) {
  const std::string kind = target_spec.substr(0, target_spec.find(' '));
  if (kind != "cuda") return invalid_argument("target '" + target_spec + "' is not a CUDA target");
  const std::string key = "-arch=sm_";
  const size_t at = target_spec.find(key);
  if (at == std::string::npos)
    return invalid_argument("target '" + target_spec + "' names no -arch=sm_XY");
  const char* begin = target_spec.data() + at + key.size();
  const char* end = target_spec.data() + target_spec.size();
  int cc = 0;
  auto [ptr, ec] = std::from_chars(begin, end, cc);
  if (ec != std::errc() || (ptr != end && *ptr != ' ') || cc < 10 || cc > 999)
    return invalid_argument("target '" + target_spec +
                            "': -arch=sm_ needs a compute capability "
                            "such as sm_80 or sm_90");
  return cc;
}

}  // namespace tensortune::schedule_space
