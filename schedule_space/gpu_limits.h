#pragma once
/// \file
/// What a CUDA kernel may use per block, and the checks GPU templates make with it.
///
/// A template's space marks a config invalid when it breaks a limit every CUDA GPU tensortune
/// supports has (compute capability 7.5 and later: 1024 threads and 48 KiB of static shared
/// memory per block; at most 1024 threads along x and y and 64 along z; grids of at most
/// 65535 blocks along y and z), so tuners never propose it (AutoTVM's verify_gpu_code rule). A
/// device reports its own limits at registration; a config that fits the universal limits but not
/// the device's (or whose compiled kernel needs more registers than the device has) is an
/// INSTANTIATION_ERROR before any launch.
///
/// Shared memory beyond 48 KiB is dynamic (`extern __shared__`, sized at launch) and needs the
/// function's opt-in attribute (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); how much a
/// block may opt into depends on the architecture (limits_for_capability), so a template that
/// uses it checks its configs against its target's limits instead of the universal ones.

#include <array>
#include <cstdint>
#include <string>

#include "support/error.h"

namespace tensortune::schedule_space {

struct GpuLimits {
  int64_t max_threads_per_block = 1024;
  int64_t max_shared_bytes_per_block = 48 * 1024;  ///< static __shared__ arrays
  /// Static and dynamic together, with the opt-in attribute (CUDA's "opt-in" limit).
  int64_t max_dynamic_shared_bytes_per_block = 48 * 1024;
  int64_t max_registers_per_block = 64 * 1024;
  int64_t max_registers_per_thread = 255;
  std::array<int64_t, 3> max_block_dims{1024, 1024, 64};  ///< threads along x, y, z
  std::array<int64_t, 3> max_grid_dims{2147483647, 65535, 65535};
  friend bool operator==(const GpuLimits&, const GpuLimits&) = default;
};

/// The limits every supported GPU has: what config spaces check.
inline constexpr GpuLimits kUniversalGpuLimits{};

/// Float accumulators one thread of a generated kernel may hold. Larger register tiles would
/// spill to local memory on every GPU (255 registers per thread) and compile for minutes.
inline constexpr int64_t kMaxCudaAccumulators = 256;

/// What a kernel of a config asks for at launch and after compilation.
struct GpuKernelUsage {
  int64_t threads_per_block = 1;
  int64_t shared_bytes = 0;               ///< static
  int64_t registers_per_thread = 0;       ///< 0 when not compiled yet
  std::array<int64_t, 3> block{1, 1, 1};  ///< threads along x, y, z
  std::array<int64_t, 3> grid{1, 1, 1};   ///< blocks along x, y, z
  int64_t dynamic_shared_bytes = 0;       ///< extern __shared__, given at launch
};

/// The usage of a launch of `grid` blocks of `block` threads (x, y, z each).
GpuKernelUsage launch_usage(std::array<int64_t, 3> block, std::array<int64_t, 3> grid,
                            int64_t shared_bytes, int64_t dynamic_shared_bytes = 0);

/// Fails with kFailedPrecondition naming the first limit the usage breaks and both values.
Status check_gpu_limits(const GpuKernelUsage& usage, const GpuLimits& limits);

/// Whether a launch fits the universal limits and the accumulator cap: what the GPU templates'
/// spaces call valid.
bool fits_universal_limits(const GpuKernelUsage& usage, int64_t accumulators);
/// The same against a target's limits (limits_for_capability).
bool fits_limits(const GpuKernelUsage& usage, int64_t accumulators, const GpuLimits& limits);

/// The universal limits with the dynamic shared memory a block of that compute capability may
/// opt into (the CUDA programming guide's table): 64 KiB on sm_75, 163 KiB on sm_80 and sm_87,
/// 99 KiB on sm_86, sm_89 and sm_12x, 227 KiB on sm_90, sm_100 and sm_103; 99 KiB for one it does
/// not know (the smallest of the recent ones).
GpuLimits limits_for_capability(int compute_capability);

/// "cuda -arch=sm_90" for compute capability 90. The CUDA target's spec in tasks and records.
std::string cuda_target_spec(int compute_capability);
/// The compute capability a bare `--target cuda` means (sm_80, Ampere): its code runs on every
/// GPU of that capability or newer.
inline constexpr int kDefaultCudaComputeCapability = 80;
/// 90 from "cuda -arch=sm_90"; fails naming the spec when it is not a CUDA target with an arch.
Expected<int> cuda_compute_capability(const std::string& target_spec);

}  // namespace tensortune::schedule_space
