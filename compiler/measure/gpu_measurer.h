#pragma once
/// \file
/// Measures configs of a CUDA template on one GPU, under the CPU's protocol: a batch's kernels
/// are generated and compiled (NVRTC cubins, on every core at once), then per config checked
/// against the device's limits
/// (INSTANTIATION_ERROR, never a launch), run once and compared with the CPU reference
/// (WRONG_ANSWER), then timed by time_evaluator on a CUDA-event clock (with `flush_cache`, L2 is
/// overwritten before each round). A launch or run failure
/// is RUNTIME_DEVICE; when it left the CUDA context unusable (ss::gpu_context_lost) the device
/// server's worker process that hit it is replaced. Built only with the CUDA Toolkit.

#include <memory>
#include <optional>
#include <vector>

#include "compiler/codegen/cuda/cuda_driver.h"
#include "compiler/measure/measurer.h"

namespace tensortune::measure {

class GpuMeasurer final : public Measurer {
 public:
  /// The task's target must name the GPU's compute capability.
  static Expected<std::unique_ptr<GpuMeasurer>> create(schedule_space::Task task,
                                                       MeasureOptions options);
  std::vector<schedule_space::MeasureResult> measure_built(
      const schedule_space::ConfigSpace& space, const std::vector<schedule_space::Config>& configs,
      const std::vector<const KernelBinary*>& built) override;
  const codegen::cuda::GpuDevice& device() const { return device_; }
  const std::string& device_key() const override { return options_.device_key; }

 private:
  GpuMeasurer(schedule_space::Task task, MeasureOptions options, codegen::cuda::GpuDevice gpu);
  /// Runs, checks and times one config whose kernel `source` and `cubin` were made for it
  /// (`prebuilt`: the cubin came from elsewhere).
  schedule_space::MeasureResult measure_one(
      const schedule_space::Config& config, const Expected<codegen::cuda::CudaKernelSource>& source,
      const std::optional<Expected<codegen::cuda::CompiledKernel>>& cubin, bool prebuilt);

  schedule_space::Task task_;
  MeasureOptions options_;
  codegen::cuda::GpuDevice device_;
  Tensor data_, weight_, reference_;
  int64_t reduction_length_ = 1;
  double best_cost_s_ = 0;
};

}  // namespace tensortune::measure
