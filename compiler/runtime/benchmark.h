#pragma once
/// \file
/// Timing a compiled network end to end, and per step (the profiler), under one protocol:
/// DESIGN's time_evaluator (one warm-up run not counted; `repeat` rounds of `number` runs;
/// number grows until a round lasts min_repeat_ms), the steady clock, the executable's fixed
/// thread count. The profile is taken in its own rounds with the same number and repeat, each
/// step timed with the same clock around its call; its sum is compared against the unprofiled
/// end-to-end median, so a profiler that disagrees with the timer shows up in its own report.
#include <string>
#include <vector>

#include "compiler/runtime/executor.h"

namespace tensortune::runtime {

struct BenchOptions {
  int repeat = 10;
  int64_t number = 1;          ///< runs per round before min_repeat_ms growth
  double min_repeat_ms = 100;  ///< a round lasts at least this long
  bool profile = false;
  /// With profile: also measure the memory's bandwidth (STREAM's triad on the executable's
  /// threads, arrays of this many MiB; 0: not measured), the roof of memory-bound steps.
  int64_t triad_mib = 128;
};

struct StepProfile {
  std::string label;
  std::string node;  ///< the group's first node (a kernel's anchor): its name in the graph
  Step::Kind kind = Step::Kind::kKernel;
  int64_t calls = 0;
  double mean_ms = 0;  ///< per call: the median over rounds of the round's mean
  double gflops = 0;   ///< 0 when the step has no counted flop
  /// The least a call must move: its kernel's arguments (inputs, weights, output) once each;
  /// 0 for steps without arguments (native and interpreted steps).
  int64_t bytes = 0;
  double gbs = 0;  ///< bytes / mean_ms
};

struct BenchResult {
  int threads = 1;
  int repeat = 0;
  int64_t number = 0;
  double warmup_ms = 0;
  std::vector<double> round_ms;  ///< per run, one per round
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double gflops = 0;  ///< counted flop / median
  /// With profile: per step, in execution order, and the profiled runs' own medians.
  std::vector<StepProfile> steps;
  double profile_sum_ms = 0;      ///< sum over steps of mean_ms, to compare with median_ms
  double profiled_median_ms = 0;  ///< end to end, measured around the profiled runs
  double triad_gbs = 0;           ///< the memory's bandwidth (median triad); 0 when not measured
};

Expected<BenchResult> benchmark(Executable& exe, const BenchOptions& options);

/// The per-step table: time, calls, share, GFLOPS, GB/s and its share of the triad's bandwidth
/// (the roofline of memory-bound steps), with a header saying what it includes and a last line
/// comparing the sum with the end-to-end median.
std::string format_profile(const Executable& exe, const BenchResult& result);

}  // namespace tensortune::runtime
