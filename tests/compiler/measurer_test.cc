// The local measurer: correct configs time, invalid configs are INSTANTIATION_ERRORs, the
// time_evaluator grows `number` to reach min_repeat_ms, and outputs_match catches mistakes.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/local_measurer.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

tt::measure::MeasureOptions fast_options() {
  tt::measure::MeasureOptions o;
  o.timing.number = 2;
  o.timing.repeat = 3;
  o.timing.min_repeat_ms = 1;
  return o;
}

TEST(LocalMeasurer, MeasuresValidAndReportsInvalidConfigs) {
  ss::Conv2dWorkload w;
  w.in_channels = 16;
  w.in_height = w.in_width = 10;
  w.out_channels = 64;
  w.kernel_h = w.kernel_w = 3;
  w.pad_top = w.pad_left = w.pad_bottom = w.pad_right = 1;
  auto task = *ss::make_task(ss::kConv2dNCHWc, w, tt::codegen::host_target());
  auto space = *ss::make_config_space(task);
  auto m = tt::measure::LocalMeasurer::create(task, fast_options());
  ASSERT_TRUE(m.has_value());
  std::vector<ss::Config> configs{ss::default_config(task, space)};
  for (int64_t i = 0; i < space.size(); ++i) {
    auto c = *space.config_at(i);
    if (!space.is_valid(c)) {
      configs.push_back(c);
      break;
    }
  }
  ASSERT_EQ(configs.size(), 2u);
  auto results = (*m)->measure(space, configs);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].error_no, ss::MeasureErrorNo::kNoError) << results[0].error_msg;
  EXPECT_EQ(results[0].costs.size(), 1u);  // 3 rounds, fastest and slowest dropped
  EXPECT_GT(results[0].costs[0], 0);
  EXPECT_GT(results[0].compile_s, 0);
  EXPECT_EQ(results[1].error_no, ss::MeasureErrorNo::kInstantiationError);
  EXPECT_EQ(results[1].costs, std::vector<double>{ss::kErrorCost});
}

TEST(LocalMeasurer, CacheFlushAndTwoThreadsStillMeasureCorrectly) {
  ss::DenseWorkload d{4, 64, 128};
  auto task = *ss::make_task(ss::kDensePack, d, tt::codegen::host_target());
  auto space = *ss::make_config_space(task);
  auto o = fast_options();
  o.flush_cache = true;
  o.threads = 2;
  o.timing.number = 1;
  auto m = *tt::measure::LocalMeasurer::create(task, o);
  auto r = m->measure(space, {ss::default_config(task, space), *space.config_at(space.size() - 1)});
  ASSERT_EQ(r.size(), 2u);
  for (const auto& x : r) {
    if (!space.is_valid(*space.config_at(x.config_index))) continue;
    EXPECT_EQ(x.error_no, ss::MeasureErrorNo::kNoError) << x.error_msg;
    EXPECT_EQ(x.threads, 2);
  }
}

TEST(TimeEvaluator, RunsBeforeRoundOncePerRoundAndCutsSlowCallsShort) {
  int calls = 0, flushes = 0;
  double now = 0;  // a simulated clock: each call of the timed function takes what it says
  tt::measure::TimeEvaluatorOptions o;
  o.clock = [&] { return now; };
  o.number = 3;
  o.repeat = 4;
  o.min_repeat_ms = 0;
  auto r = tt::measure::time_evaluator([&] { ++calls, now += 1e-6; }, [&] { ++flushes; }, o);
  EXPECT_EQ(flushes, 4);
  EXPECT_EQ(calls, 1 + 4 * 3);  // warm-up + repeat * number
  EXPECT_EQ(r.round_seconds.size(), 4u);
  calls = 0;
  o.cutoff_s = 1e-4;
  auto slow = tt::measure::time_evaluator([&] { ++calls, now += 2e-3; }, nullptr, o);
  EXPECT_TRUE(slow.cut_short);
  EXPECT_EQ(calls, 2);  // warm-up + one timed call
  EXPECT_EQ(slow.number, 1);
  EXPECT_DOUBLE_EQ(slow.round_seconds.at(0), 2e-3);
}

TEST(TimeEvaluator, GrowsNumberUntilMinRepeatMs) {
  int calls = 0;
  double now = 0;
  auto fn = [&] {
    ++calls;
    now += 200e-6;
  };
  tt::measure::TimeEvaluatorOptions o;
  o.clock = [&] { return now; };
  o.number = 1;
  o.repeat = 2;
  o.min_repeat_ms = 5;
  auto r = tt::measure::time_evaluator(fn, nullptr, o);
  ASSERT_EQ(r.round_seconds.size(), 2u);
  EXPECT_GE(r.number, 5);  // 5 ms / 0.2 ms per call
  EXPECT_NEAR(r.round_seconds[0], 200e-6, 1e-12);
  EXPECT_LT(r.round_seconds[0], 5e-3);
  // Exactly: the warm-up sets number = 5 ms / 0.2 ms + 1, and no round is timed twice.
  EXPECT_EQ(r.number, 26);
  EXPECT_EQ(calls, 1 + 2 * 26);
}

TEST(TimeEvaluator, GrowsAgainWhenTheWarmUpWasSlowerThanTheCalls) {
  double now = 0;
  int calls = 0;
  // Binary fractions, so that the arithmetic is exact. A cold first call (2^-10 s), then
  // 2^-14 s calls, at least 2^-8 s per round: number starts at 2^-8 / 2^-10 + 1 = 5 (from the
  // warm-up), the round lasts 5 * 2^-14 s, too short, so number grows to 2^-8 / 2^-14 + 1 = 65
  // and the round is timed again.
  auto fn = [&] { now += std::ldexp(1.0, calls++ == 0 ? -10 : -14); };
  tt::measure::TimeEvaluatorOptions o;
  o.clock = [&] { return now; };
  o.number = 1;
  o.repeat = 1;
  o.min_repeat_ms = 1000 * std::ldexp(1.0, -8);
  auto r = tt::measure::time_evaluator(fn, nullptr, o);
  EXPECT_EQ(r.number, 65);
  EXPECT_EQ(calls, 1 + 5 + 65);
  EXPECT_DOUBLE_EQ(r.round_seconds.at(0), std::ldexp(1.0, -14));
}

TEST(TimeEvaluator, PredictedOverrunIsATimeout) {
  double now = 0;
  auto fn = [&] { now += 20e-3; };
  tt::measure::TimeEvaluatorOptions o;
  o.clock = [&] { return now; };
  o.number = 10;
  o.repeat = 3;
  o.timeout_s = 0.1;
  EXPECT_TRUE(tt::measure::time_evaluator(fn, nullptr, o).timed_out);
}

TEST(OutputsMatch, CatchesMismatchAndNaN) {
  std::string why;
  EXPECT_TRUE(tt::measure::outputs_match({1.0f, 2.0f}, {1.0f, 2.00001f}, 16, &why));
  EXPECT_FALSE(tt::measure::outputs_match({1.0f, 2.5f}, {1.0f, 2.0f}, 16, &why));
  EXPECT_NE(why.find("element 1"), std::string::npos);
  EXPECT_FALSE(tt::measure::outputs_match({1.0f, std::nanf("")}, {1.0f, 2.0f}, 16, &why));
}

TEST(LocalMeasurer, RejectsBadOptions) {
  ss::DenseWorkload d{1, 8, 8};
  auto task = *ss::make_task(ss::kDensePack, d, tt::codegen::host_target());
  auto o = fast_options();
  o.threads = 0;
  auto m = tt::measure::LocalMeasurer::create(task, o);
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find("threads = 0"), std::string::npos);
}

}  // namespace
