#pragma once
/// \file
/// What one measurement produces. Error numbers are AutoTVM's MeasureErrorNo, same values, so
/// that logs exchange both ways. A failed measurement is data, not an Error.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schedule_space/kernel_binary.h"

namespace tensortune::schedule_space {

enum class MeasureErrorNo : int {
  kNoError = 0,
  kInstantiationError = 1,
  kCompileHost = 2,
  kCompileDevice = 3,
  kRuntimeDevice = 4,
  kWrongAnswer = 5,
  kBuildTimeout = 6,
  kRunTimeout = 7,
  kUnknownError = 8,
};

const char* measure_error_name(MeasureErrorNo e);

/// AutoTVM's time_evaluator defaults, the one place they are written: `number` runs per
/// repeat, `repeat` repeats, a repeat lasting at least `min_repeat_ms` (number is raised).
inline constexpr int64_t kDefaultNumber = 10;
inline constexpr int kDefaultRepeat = 3;
inline constexpr double kDefaultMinRepeatMs = 100;

/// What a RUNTIME_DEVICE message ends with when the GPU fault left the process's CUDA context
/// unusable (an illegal address, a failed launch: CUDA's "sticky" errors). Only then is the
/// measuring process replaced; a launch the driver refused leaves the context working.
inline constexpr std::string_view kGpuContextLost = "the CUDA context is lost";
inline bool gpu_context_lost(std::string_view error_msg) {
  return error_msg.find(kGpuContextLost) != std::string_view::npos;
}

/// Cost AutoTVM writes for a failed measurement.
inline constexpr double kErrorCost = 1e9;

struct MeasureResult {
  int64_t config_index = 0;
  /// Seconds per run, one per kept repeat (the fastest and slowest are dropped when there are
  /// more than two repeats, as AutoTVM's runner does). {kErrorCost} on error.
  std::vector<double> costs;
  MeasureErrorNo error_no = MeasureErrorNo::kNoError;
  std::string error_msg;
  double all_cost_s = 0;  ///< wall time of the whole measurement: compile + check + timing
  double compile_s = 0;   ///< code generation and JIT time
  double timestamp = 0;   ///< unix seconds when the measurement finished
  int threads = 1;        ///< threads the kernel ran on
  int64_t number = 0;     ///< runs per repeat after min_repeat_ms growth
  std::string device_key;
  /// A builder's result (a farm's builder servers): the kernel it built, which the client then
  /// sends to the devices; null for a measurement.
  std::shared_ptr<const KernelBinary> kernel;

  double mean_cost() const;
  bool ok() const { return error_no == MeasureErrorNo::kNoError; }
  /// Seconds the kernel ran while it was timed, over `repeat` rounds of `number` runs (the
  /// work a device exists for, against its wall time): 0 for an error.
  double timed_seconds(int repeat) const;
};

}  // namespace tensortune::schedule_space
