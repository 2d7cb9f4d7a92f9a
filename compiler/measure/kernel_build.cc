#include "compiler/measure/kernel_build.h"

#include <algorithm>
#include <utility>

#include "compiler/codegen/llvm/kernel.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/template.h"
#include "support/sha256.h"
#include "support/stopwatch.h"

#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/cuda/nvrtc.h"
#endif

namespace tensortune::measure {

namespace ss = schedule_space;

namespace {

bool builds_cubins(const ss::Task& task) {
  return ss::template_of(task).target_kind().runs_on_gpu();
}

Error invalid(const ss::ConfigSpace& space, const ss::Config& config) {
  return Error{ErrorCode::kFailedPrecondition, space.template_name() + ": config " +
                                                   std::to_string(config.index) + " (" +
                                                   space.describe(config) + ") is invalid"};
}

#ifdef TT_WITH_CUDA
/// The config's CUDA source, checked against the limits of the target's architecture (the
/// device checks its own again at load), and the key of its cubin.
Expected<std::pair<codegen::cuda::CudaKernelSource, KernelBinary>> cubin_key(
    const ss::Task& task, const ss::ConfigSpace& space, const ss::Config& config) {
  TT_ASSIGN_OR_RETURN(int cc, ss::cuda_compute_capability(task.target.spec));
  TT_ASSIGN_OR_RETURN(codegen::cuda::CudaKernelSource source,
                      codegen::cuda::emit_cuda_kernel(task, space, config));
  TT_RETURN_IF_ERROR(ss::check_gpu_limits(source.usage(), ss::limits_for_capability(cc)));
  KernelBinary key;
  key.format = KernelFormat::kCubin;
  key.arch = "sm_" + std::to_string(cc);
  key.source_sha256 = sha256_hex(source.source);
  TT_ASSIGN_OR_RETURN(key.compiler, codegen::cuda::nvrtc_version());
  return std::make_pair(std::move(source), std::move(key));
}
#endif

Error no_cuda(const ss::Task& task) {
  return unavailable(task.template_name +
                     ": this build cannot compile CUDA kernels (built without the CUDA Toolkit)");
}

/// The key of a CPU object for the CPU the target names.
Expected<std::pair<codegen::CpuDescription, KernelBinary>> cpu_object_key(
    const ss::Task& task, const ss::ConfigSpace& space, const ss::Config& config) {
  TT_ASSIGN_OR_RETURN(codegen::CpuDescription cpu,
                      codegen::cpu_for_target_spec(task.target.spec, task.target.vector_lanes));
  TT_ASSIGN_OR_RETURN(std::string ir, codegen::kernel_ir(task, space, config, {}, false));
  KernelBinary key;
  key.format = KernelFormat::kCpuObject;
  key.arch = cpu.cpu;
  key.features = cpu.features;
  key.source_sha256 = sha256_hex(ir);
  key.compiler = codegen::llvm_version();
  return std::make_pair(std::move(cpu), std::move(key));
}

}  // namespace

ss::MeasureErrorNo build_error_no(const ss::Task& task, const Error& error) {
  if (error.code == ErrorCode::kFailedPrecondition) return ss::MeasureErrorNo::kInstantiationError;
  return builds_cubins(task) ? ss::MeasureErrorNo::kCompileDevice
                             : ss::MeasureErrorNo::kCompileHost;
}

Status can_build_kernels(const ss::Task& task) {
  if (!builds_cubins(task)) {
    auto cpu = codegen::cpu_for_target_spec(task.target.spec, task.target.vector_lanes);
    if (!cpu) return cpu.error();
    return ok_status();
  }
#ifdef TT_WITH_CUDA
  return codegen::cuda::nvrtc_available();
#else
  return no_cuda(task);
#endif
}

Expected<KernelBinary> kernel_build_key(const ss::Task& task, const ss::ConfigSpace& space,
                                        const ss::Config& config) {
  if (!space.is_valid(config)) return invalid(space, config);
  if (!builds_cubins(task)) {
    TT_ASSIGN_OR_RETURN(auto cpu_and_key, cpu_object_key(task, space, config));
    return std::move(cpu_and_key.second);
  }
#ifdef TT_WITH_CUDA
  TT_ASSIGN_OR_RETURN(auto source_and_key, cubin_key(task, space, config));
  return std::move(source_and_key.second);
#else
  return no_cuda(task);
#endif
}

Expected<KernelBinary> build_kernel(const ss::Task& task, const ss::ConfigSpace& space,
                                    const ss::Config& config) {
  if (!space.is_valid(config)) return invalid(space, config);
  const Stopwatch start;
  if (!builds_cubins(task)) {
    TT_ASSIGN_OR_RETURN(auto cpu_and_key, cpu_object_key(task, space, config));
    KernelBinary& b = cpu_and_key.second;
    TT_ASSIGN_OR_RETURN(b.code,
                        codegen::compile_kernel_object(task, space, config, cpu_and_key.first));
    b.build_s = start.seconds();
    return std::move(b);
  }
#ifdef TT_WITH_CUDA
  TT_ASSIGN_OR_RETURN(auto source_and_key, cubin_key(task, space, config));
  KernelBinary& b = source_and_key.second;
  TT_ASSIGN_OR_RETURN(
      codegen::cuda::NvrtcOutput out,
      codegen::cuda::nvrtc_compile(source_and_key.first,
                                   *ss::cuda_compute_capability(task.target.spec), /*cubin=*/true));
  b.code = std::move(out.cubin);
  b.build_s = start.seconds();
  return std::move(b);
#else
  return no_cuda(task);
#endif
}

}  // namespace tensortune::measure
