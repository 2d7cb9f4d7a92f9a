// GpuExecution in a build without the CUDA Toolkit (TT_WITH_CUDA off): no GPU network can be
// loaded, and load() says why. The executor holds a GpuExecution only after a load succeeded,
// so the other members are never reached; they exist so that a build without CUDA links.
#include "compiler/runtime/gpu_executor.h"

namespace tensortune::runtime {

struct GpuExecution::Impl {
  graph::MemoryPlan plan;
  std::vector<graph::Tensor> outputs;
};

GpuExecution::GpuExecution(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuExecution::~GpuExecution() = default;

Expected<std::unique_ptr<GpuExecution>> GpuExecution::load(std::shared_ptr<const CompiledNetwork>,
                                                           int) {
  return Error{ErrorCode::kFailedPrecondition,
               "this tensortune was built without the CUDA Toolkit: it cannot run a network on a "
               "GPU (run it with --emulate, or build where /usr/local/cuda exists)"};
}

const graph::MemoryPlan& GpuExecution::memory_plan() const { return impl_->plan; }

Status GpuExecution::set_input(graph::ValueId, const graph::Tensor&) {
  return Error{ErrorCode::kFailedPrecondition, "no GPU in a build without the CUDA Toolkit"};
}

Status GpuExecution::run(std::vector<double>*) {
  return Error{ErrorCode::kFailedPrecondition, "no GPU in a build without the CUDA Toolkit"};
}

const std::vector<graph::Tensor>& GpuExecution::outputs() const { return impl_->outputs; }

}  // namespace tensortune::runtime
