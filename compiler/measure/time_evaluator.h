#pragma once
/// \file
/// The time_evaluator protocol (AutoTVM's, same semantics): one warm-up call not counted; then
/// `repeat` rounds; before each round the optional `before_round` hook (cache flush); within a
/// round, `number` back-to-back calls are timed with a steady clock, and while that lasts less
/// than `min_repeat_ms`, number grows to max(min_repeat_ms / per_call + 1, 1.618 * number) and
/// the round is timed again. `number` stays grown for later rounds. A round's result is its
/// duration / number.
///
/// Two savings that keep those semantics: the warm-up call's duration sets the first round's
/// `number` (so that no round is timed only to be thrown away for being shorter than
/// min_repeat_ms), and a call slower than `cutoff_s` (a config that cannot be the best: the
/// measurer sets it to a multiple of the best cost so far) is timed in one round of one call.

#include <cstdint>
#include <functional>
#include <vector>

#include "schedule_space/measure.h"

namespace tensortune::measure {

struct TimeEvaluatorOptions {
  int64_t number = schedule_space::kDefaultNumber;
  int repeat = schedule_space::kDefaultRepeat;
  double min_repeat_ms = schedule_space::kDefaultMinRepeatMs;
  /// Stop (RUN_TIMEOUT) when the warm-up call predicts number * repeat calls beyond this.
  double timeout_s = 10;
  /// Warm-up slower than this: one round of one call (0 disables).
  double cutoff_s = 0;
  /// Seconds from any fixed origin, read around the warm-up and each round (never inside
  /// one). Empty: the steady clock. Tests pass a simulated clock to check the protocol
  /// without depending on how fast this machine is.
  std::function<double()> clock;
};

struct TimingResult {
  std::vector<double> round_seconds;  ///< seconds per call, one per round
  int64_t number = 0;                 ///< calls per round after growth
  double warmup_seconds = 0;
  bool timed_out = false;
  bool cut_short = false;  ///< timed with one call because of cutoff_s
};

TimingResult time_evaluator(const std::function<void()>& fn,
                            const std::function<void()>& before_round,
                            const TimeEvaluatorOptions& options);

/// Evicts every cache line of [p, p + bytes) from all cache levels (clflush); a no-op off x86.
void flush_cache(const void* p, size_t bytes);

/// Evicts the caches and the TLB as a network's other layers would before a layer runs: reads
/// one float per cache line of a buffer twice the last-level cache (64 MiB where its size is
/// unknown; allocated on the first call). flush_cache alone leaves the TLB warm and the caches
/// full of clean lines, and a 7x7x512 Winograd layer then runs in 1.32 ms where a network runs
/// it in 2.0-2.4 ms; with this pass first, in 1.9 ms.
void evict_caches();

/// AutoTVM's runner: with more than two rounds drop the fastest and the slowest.
std::vector<double> drop_extremes(std::vector<double> rounds);

}  // namespace tensortune::measure
