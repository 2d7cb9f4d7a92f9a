#pragma once
/// \file
/// Running a network compiled for CUDA on a GPU (builds with the CUDA Toolkit): every
/// intermediate tensor in one device arena laid out by the static memory plan, weights and
/// parameters uploaded once at load, kernels queued in step order on one stream; reshapes are
/// device copies; a step without a kernel runs the interpreter's code on the host with its
/// operands copied across (counted at compile time, never silent). A run ends with the outputs
/// copied back, so that its wall time is the network's.
///
/// Internal to runtime: Executable (executor.h) delegates here. No GPU was lent while this was
/// written: it compiles, and its refusals are tested; the GPU path runs where a GPU exists
/// (`scripts/test.sh --gpu`).
#include <memory>
#include <vector>

#include "compiler/graph/memory_plan.h"
#include "compiler/runtime/compiled_network.h"
#include "support/error.h"

namespace tensortune::runtime {

class GpuExecution {
 public:
  /// On GPU `gpu` (an ordinal). kFailedPrecondition naming why when it is not usable (no
  /// driver, no such GPU: the message lists those there are, an older compute capability than
  /// the network's) or a kernel exceeds the GPU's limits.
  static Expected<std::unique_ptr<GpuExecution>> load(std::shared_ptr<const CompiledNetwork> net,
                                                      int gpu);
  ~GpuExecution();

  const graph::MemoryPlan& memory_plan() const;
  Status set_input(graph::ValueId input, const graph::Tensor& value);
  /// `step_seconds`: each step is waited for and its wall time added to its slot.
  Status run(std::vector<double>* step_seconds);
  /// The graph outputs of the last run, on the host.
  const std::vector<graph::Tensor>& outputs() const;

  struct Impl;

 private:
  explicit GpuExecution(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortune::runtime
