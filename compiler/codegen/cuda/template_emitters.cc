// The CUDA backend's list of template emitters: one line per template whose backend is "cuda".
// The template contract test keeps this list and the registry in step.
#include "compiler/codegen/cuda/emitters.h"

namespace tensortune::codegen::cuda {
namespace {

struct Registered {
  std::string_view template_name;
  EmitFn emit;
};

constexpr Registered kEmitters[] = {
    {"conv2d_nchw.cuda", emit_conv2d_nchw},
    {"conv2d_NCHWc.cuda", emit_conv2d_nchwc},
    {"dense_small_batch.gpu", emit_dense_small_batch},
    {"dense_large_batch.gpu", emit_dense_large_batch},
};

EmitFn find_emitter(std::string_view template_name) {
  for (const Registered& r : kEmitters)
    if (r.template_name == template_name) return r.emit;
  return nullptr;
}

}  // namespace

bool can_emit_cuda_kernel(std::string_view template_name) {
  return find_emitter(template_name) != nullptr;
}

Expected<CudaKernelSource> emit_cuda_kernel(const schedule_space::Task& task,
                                            const schedule_space::ConfigSpace& space,
                                            const schedule_space::Config& config,
                                            const CudaKernelOptions& options) {
  const EmitFn emit = find_emitter(task.template_name);
  if (!emit) return unimplemented("template " + task.template_name + " has no CUDA emitter");
  if (!space.is_valid(config))
    return Error{ErrorCode::kFailedPrecondition, "config " + std::to_string(config.index) + " (" +
                                                     space.describe(config) + ") is invalid for " +
                                                     task.template_name};
  return emit(task, space, config, options);
}

std::string epilogue(const std::string& value, const std::string& channel,
                     const CudaKernelOptions& options) {
  std::string v = value;
  if (options.bias) v = "(" + v + " + bias[" + channel + "])";
  if (options.relu) v = "fmaxf(" + v + ", 0.0f)";
  return v;
}

std::string unroll_pragma(int64_t nest_steps, int64_t auto_unroll_max_step, bool unroll_explicit) {
  if (auto_unroll_max_step == 0 || nest_steps > auto_unroll_max_step) return "#pragma unroll 1";
  return unroll_explicit ? "#pragma unroll" : "";
}

}  // namespace tensortune::codegen::cuda
