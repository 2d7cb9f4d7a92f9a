#pragma once
/// \file
/// Measures configs of one task on this machine: for each config it compiles the kernel, runs
/// it once on fixed random inputs and checks the output against the reference implementation
/// (WRONG_ANSWER on mismatch), then times it with the time_evaluator protocol. Every failure
/// becomes a MeasureResult error code; nothing here throws or crashes on a bad config.
///
/// Inputs and the reference output are computed once per task; packed operands are cached per
/// kernel layout.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/measure/kernel_build.h"
#include "compiler/measure/time_evaluator.h"
#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"
#include "schedule_space/template.h"
#include "support/error.h"
#include "support/tensor.h"
#include "support/thread_pool.h"

namespace tensortune::measure {

/// What measures configs of one task (LocalMeasurer, GpuMeasurer); make one with make_measurer
/// (measurer.h).
class Measurer {
 public:
  virtual ~Measurer() = default;
  /// One result per config, in order; every failure is a result, never an Error.
  std::vector<schedule_space::MeasureResult> measure(
      const schedule_space::ConfigSpace& space,
      const std::vector<schedule_space::Config>& configs) {
    return measure_built(space, configs, {});
  }
  /// The same with kernels built elsewhere (kernel_binary.h): `built` is empty or has one entry
  /// per config, null meaning "build it here". A binary is checked (check_kernel_binary)
  /// before it is loaded; one that fails the check or does not load is that config's compile
  /// error (COMPILE_HOST on a CPU, COMPILE_DEVICE on a GPU), with the reason.
  virtual std::vector<schedule_space::MeasureResult> measure_built(
      const schedule_space::ConfigSpace& space, const std::vector<schedule_space::Config>& configs,
      const std::vector<const KernelBinary*>& built) = 0;
  /// The key its results are filed under.
  virtual const std::string& device_key() const = 0;
  /// The host threads a kernel runs on while timed; 0 where that does not apply (a GPU).
  virtual int threads() const { return 0; }
};

struct MeasureOptions {
  TimeEvaluatorOptions timing;
  int threads = 1;
  /// Before each round, evict the caches and the TLB (evict_caches) and flush the weights and
  /// output (every operand but the data, as AutoTVM): the state a network runs a layer in.
  bool flush_cache = false;
  bool check_correctness = true;
  /// Threads that compile a batch's kernels before any of them is timed (as AutoTVM's
  /// builder pool); 0 = one per hardware thread. Timing never overlaps compilation.
  int compile_threads = 0;
  /// A config whose warm-up run is this many times slower than the best so far of this
  /// measurer is timed with a single run (it cannot become the best; timing it fully would
  /// cost number * repeat slow runs). 0 disables.
  double slow_cutoff = 8;
  std::string device_key;  ///< empty: host_device_key() (a GPU's: cuda-smXY)
  int gpu = 0;             ///< CUDA templates: the GPU (ordinal) that measures them
};

/// Tolerance for comparing against the double-precision reference: |y - r| <= atol + rtol*|r|
/// with atol = 1e-4 * sqrt(reduction length), rtol = 1e-4.
bool outputs_match(const std::vector<float>& got, const std::vector<float>& want,
                   int64_t reduction_length, std::string* first_mismatch);

/// Completes a measurement's result: the error (costs {kErrorCost} unless kNoError), the wall
/// time since `start`, the timestamp; logged at debug level. Every measurer ends with it.
schedule_space::MeasureResult finish_result(schedule_space::MeasureResult r,
                                            schedule_space::MeasureErrorNo error,
                                            std::string message,
                                            std::chrono::steady_clock::time_point start);

class LocalMeasurer final : public Measurer {
 public:
  static Expected<std::unique_ptr<LocalMeasurer>> create(schedule_space::Task task,
                                                         MeasureOptions options);
  ~LocalMeasurer();

  const schedule_space::Task& task() const { return task_; }
  const MeasureOptions& options() const { return options_; }
  const std::string& device_key() const override { return options_.device_key; }
  int threads() const override { return options_.threads; }

  std::vector<schedule_space::MeasureResult> measure_built(
      const schedule_space::ConfigSpace& space, const std::vector<schedule_space::Config>& configs,
      const std::vector<const KernelBinary*>& built) override;

 private:
  LocalMeasurer(schedule_space::Task task, MeasureOptions options);
  struct Built;
  schedule_space::MeasureResult measure_one(const schedule_space::ConfigSpace& space,
                                            const schedule_space::Config& config, Built& built);
  struct Packed;
  const Packed& packed_for(const schedule_space::KernelSignature& sig);

  schedule_space::Task task_;
  MeasureOptions options_;
  Tensor data_, weight_, reference_;
  int64_t reduction_length_ = 1;
  double best_cost_s_ = 0;  ///< best mean cost measured so far (0: none yet)
  std::unique_ptr<ThreadPool> pool_;
  /// Packed operands by layouts (the signature without its parallel extent); a handful per task.
  std::vector<std::pair<schedule_space::KernelSignature, std::unique_ptr<Packed>>> packed_;
};

}  // namespace tensortune::measure
