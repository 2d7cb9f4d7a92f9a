// Layout transforms as the graph tuner prices them: timed with the executor's loop after a check
// that every element lands where the layouts say, stored in the DB, reused, and estimated (with
// the reason) where timing fails.
#include "tuner/graph_tuner/transform_costs.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "compiler/runtime/transform_timing.h"
#include "tests/support/test_paths.h"

namespace tensortune::tuner::graph_tuner {
namespace {

namespace ss = schedule_space;

measure::MeasureOptions quick() {
  measure::MeasureOptions o;
  o.timing.number = 1;
  o.timing.repeat = 3;
  o.timing.min_repeat_ms = 0;
  o.device_key = "test-key";
  return o;
}

TEST(TransformTiming, EveryBlockPairIsCheckedAndTimed) {
  // Blocks that split, merge and regroup channels, to and from plain (block 1), odd spatial sizes.
  const std::pair<int64_t, int64_t> pairs[] = {{1, 4},  {4, 1}, {3, 4}, {4, 3}, {12, 2},
                                               {2, 12}, {6, 6}, {1, 1}, {4, 12}};
  for (auto [from, to] : pairs) {
    for (int threads : {1, 2}) {
      measure::MeasureOptions o = quick();
      o.threads = threads;
      const ss::MeasureResult r = runtime::time_layout_transform({2, 12, 5, 7, from, to}, o);
      EXPECT_TRUE(r.ok()) << from << "->" << to << ": " << r.error_msg;
      EXPECT_EQ(r.costs.size(), 1u) << "3 rounds, fastest and slowest dropped";
      EXPECT_GT(r.mean_cost(), 0);
      EXPECT_EQ(r.device_key, "test-key");
      EXPECT_EQ(r.threads, threads);
    }
  }
}

TEST(TransformTiming, MalformedTransformsAreRefusedNamingTheField) {
  const ss::MeasureResult r = runtime::time_layout_transform({1, 12, 5, 7, 5, 4}, quick());
  EXPECT_EQ(r.error_no, ss::MeasureErrorNo::kInstantiationError);
  EXPECT_NE(r.error_msg.find("from_block = 5 does not divide channels = 12"), std::string::npos)
      << r.error_msg;
  const ss::MeasureResult z = runtime::time_layout_transform({1, 0, 5, 7, 1, 4}, quick());
  EXPECT_NE(z.error_msg.find("channels = 0"), std::string::npos) << z.error_msg;
}

TEST(TransformCosts, TimedOnceStoredReusedAndEstimatedWithTheReason) {
  const std::string path = testing::fresh_db_path("transform_costs");
  auto store = records::RecordStore::open(path);
  ASSERT_TRUE(store);
  const std::vector<Transform> needed = {
      {{1, 16, 8, 8}, 4, 8}, {{1, 16, 8, 8}, 8, 4}, {{1, 32, 4, 4}, 16, 2}};
  int calls = 0;
  // Times the first two; the third "fails" as a device's measurement would.
  const TransformTimer timer = [&](const std::vector<Transform>& ts,
                                   const std::function<void(int, int)>&) {
    ++calls;
    std::vector<TransformTiming> out;
    for (const Transform& t : ts) {
      if (t.shape[1] == 32)
        out.emplace_back(Error{ErrorCode::kInternal, "RUN_TIMEOUT: too slow"});
      else
        out.emplace_back(
            runtime::time_layout_transform(transform_workload(t), quick()).mean_cost());
    }
    return out;
  };
  auto first = transform_costs(**store, "test-key", needed, &timer);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->measured, 2);
  EXPECT_EQ(first->estimated, 1);
  ASSERT_EQ(first->estimate_reasons.size(), 1u);
  EXPECT_EQ(first->estimate_reasons[0], "RUN_TIMEOUT: too slow");
  EXPECT_DOUBLE_EQ(first->seconds.at(needed[2]), estimate_transform(needed[2]));

  // The measured ones are reused; the estimate is timed again (and fails again).
  auto second = transform_costs(**store, "test-key", needed, &timer);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->reused, 2);
  EXPECT_EQ(second->measured, 0);
  EXPECT_EQ(second->estimated, 1);
  EXPECT_EQ(calls, 2);
  EXPECT_DOUBLE_EQ(second->seconds.at(needed[0]), first->seconds.at(needed[0]));

  // Without a timer (another machine's key), stored estimates are used as they are.
  auto untimed = transform_costs(**store, "test-key", needed, nullptr);
  ASSERT_TRUE(untimed);
  EXPECT_EQ(untimed->reused, 2);
  EXPECT_EQ(untimed->estimated, 1);
  // Another key has nothing stored: all estimated, with the reason.
  auto other = transform_costs(**store, "other-key", needed, nullptr);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->estimated, 3);
  ASSERT_FALSE(other->estimate_reasons.empty());
  EXPECT_NE(other->estimate_reasons[0].find("no device"), std::string::npos);

  // A table of another format (an older timed loop): refused naming both formats, nothing
  // changed; --retime-transforms (retime) clears it and times again.
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "INSERT OR REPLACE INTO meta(key, value) VALUES "
                           "('layout_transforms_format', '0')",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  auto stale = transform_costs(**store, "test-key", needed, &timer);
  ASSERT_FALSE(stale);
  EXPECT_NE(stale.error().message.find("format 0; this tensortune takes format 1"),
            std::string::npos)
      << stale.error().message;
  auto kept = (*store)->transform_cost("test-key", shape_key(needed[0].shape), 4, 8);
  ASSERT_TRUE(kept && *kept);
  EXPECT_DOUBLE_EQ((*kept)->seconds, first->seconds.at(needed[0]));
  EXPECT_EQ(calls, 2);
  auto retimed = transform_costs(**store, "test-key", needed, &timer, {}, /*retime=*/true);
  ASSERT_TRUE(retimed) << retimed.error().message;
  EXPECT_EQ(retimed->measured, 2);
  EXPECT_EQ(retimed->reused, 0);
  EXPECT_EQ(*(*store)->transform_format(), kTransformFormat);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tensortune::tuner::graph_tuner
