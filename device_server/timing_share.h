#pragma once
/// \file
/// The share of a device server's wall time its slots spend timing kernels, over a sliding
/// window: what says whether its GPUs (or cores) do the work they are there for, or wait for
/// something else (compiles, the tracker, the clients). Reported in every heartbeat (the
/// tracker's `status` shows it), as a gauge on the device's metrics port, and summed as a
/// counter. Time is injected, so the arithmetic is tested without waiting.
#include <chrono>
#include <deque>
#include <mutex>
#include <utility>

namespace tensortune::device_server {

class TimingShare {
 public:
  using Clock = std::chrono::steady_clock;
  TimingShare(int slots, double window_s, Clock::time_point start);

  /// A slot finished an item at `now` whose kernel ran `seconds` while timed
  /// (ss::MeasureResult::timed_seconds).
  void add(double seconds, Clock::time_point now);
  /// Seconds timed in the last window (or since the start, while younger than one) over the
  /// slots' wall time in that span, in [0, 1]: an item is counted when it finishes.
  double fraction(Clock::time_point now) const;
  /// Seconds timed since the start.
  double total_seconds() const;

 private:
  int slots_;
  double window_s_;
  Clock::time_point start_;
  mutable std::mutex mu_;
  mutable std::deque<std::pair<Clock::time_point, double>> recent_;
  double total_ = 0;
};

}  // namespace tensortune::device_server
