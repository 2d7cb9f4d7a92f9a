// The share of a device's slot time spent timing kernels: a sliding window over injected time.
#include "device_server/timing_share.h"

#include <gtest/gtest.h>

#include "schedule_space/measure.h"

namespace tensortune::testing {
namespace {

using device_server::TimingShare;
using namespace std::chrono_literals;

TEST(TimingShare, IsTimedSecondsOverTheSlotsWallTimeInTheLastWindow) {
  const TimingShare::Clock::time_point t0{};
  TimingShare share(/*slots=*/2, /*window_s=*/60, t0);
  EXPECT_EQ(share.fraction(t0), 0.0);
  // Younger than the window: over the time since the start. 10 s of two slots, 5 s timed.
  share.add(3, t0 + 4s);
  share.add(2, t0 + 9s);
  EXPECT_DOUBLE_EQ(share.fraction(t0 + 10s), 5.0 / 20.0);
  // 100 s in: only what finished in the last 60 s counts.
  share.add(30, t0 + 70s);
  EXPECT_DOUBLE_EQ(share.fraction(t0 + 100s), 30.0 / 120.0);
  EXPECT_DOUBLE_EQ(share.total_seconds(), 35.0);
  // A long item finishing at once cannot claim more than all of the slots' time.
  share.add(1000, t0 + 101s);
  EXPECT_EQ(share.fraction(t0 + 101s), 1.0);
  // Nothing for a window: back to zero.
  EXPECT_EQ(share.fraction(t0 + 500s), 0.0);
}

TEST(TimingShare, TimedSecondsOfAResultAreItsMeanRunTimesItsRuns) {
  schedule_space::MeasureResult r;
  r.costs = {0.002, 0.004};
  r.number = 10;
  EXPECT_DOUBLE_EQ(r.timed_seconds(3), 0.003 * 10 * 3);
  r.error_no = schedule_space::MeasureErrorNo::kRunTimeout;
  EXPECT_EQ(r.timed_seconds(3), 0.0);
}

}  // namespace
}  // namespace tensortune::testing
