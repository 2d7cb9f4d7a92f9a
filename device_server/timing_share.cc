#include "device_server/timing_share.h"

#include <algorithm>

namespace tensortune::device_server {

TimingShare::TimingShare(int slots, double window_s, Clock::time_point start)
    : slots_(std::max(1, slots)), window_s_(window_s), start_(start) {}

void TimingShare::add(double seconds, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  recent_.emplace_back(now, seconds);
  total_ += seconds;
}

double TimingShare::fraction(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto window =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(window_s_));
  const Clock::time_point from = std::max(start_, now - window);
  while (!recent_.empty() && recent_.front().first < from) recent_.pop_front();
  const double span = std::chrono::duration<double>(now - from).count();
  if (span <= 0) return 0;
  double timed = 0;
  for (const auto& [when, seconds] : recent_) timed += seconds;
  return std::clamp(timed / (span * slots_), 0.0, 1.0);
}

double TimingShare::total_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

}  // namespace tensortune::device_server
