#pragma once
/// \file
/// Seconds elapsed since a point, on the monotonic clock: what every "how long did this take"
/// in the code means (compile time, a measurement's wall time, a tuning run's progress).

#include <chrono>

namespace tensortune {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  /// Seconds since construction or the last restart().
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void restart() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tensortune
