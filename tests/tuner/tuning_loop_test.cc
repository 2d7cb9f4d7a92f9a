// The tuning loop: budget, early stopping, resume from the DB, recording every result, and one
// real end-to-end run with the local measurer.
#include "tuner/tuning_loop.h"

#include <gtest/gtest.h>

#include "compiler/codegen/llvm/kernel.h"
#include "tests/support/test_paths.h"
#include "tuner/index_tuners.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

ss::Task task() {
  return *ss::make_task(ss::kConv2dNCHWc, ss::square_conv2d(16, 14, 32, 3, 1),
                        tt::codegen::host_target());
}

/// A measurer with a known cost per config (the loop's logic is what is under test here; the
/// real measurer is exercised below and in compiler_test). Every 5th config fails.
class TableMeasurer final : public tt::tuner::Measurer {
 public:
  tt::Expected<std::vector<ss::MeasureResult>> measure(
      const ss::ConfigSpace&, const std::vector<ss::Config>& configs) override {
    std::vector<ss::MeasureResult> out;
    for (const auto& c : configs) {
      ss::MeasureResult r;
      r.config_index = c.index;
      r.device_key = device_key();
      r.threads = threads_;
      if (c.index % 5 == 0) {
        r.error_no = ss::MeasureErrorNo::kCompileHost;
        r.costs = {ss::kErrorCost};
      } else {
        r.costs = {1e-3 * (1 + (c.index * 7919) % 97)};
      }
      ++calls;
      out.push_back(r);
    }
    return out;
  }
  std::string device_key() const override { return "test-device"; }
  int threads() const override { return threads_; }
  int calls = 0;
  int threads_ = 1;
};

TEST(TuningLoop, HonoursBudgetAndRecordsEverything) {
  const ss::Task t = task();
  auto space = *ss::make_config_space(t);
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("loop_budget"));
  tt::tuner::RandomTuner tuner(space, 3);
  TableMeasurer m;
  tt::tuner::TuneOptions o;
  o.trials = 37;
  o.batch_size = 8;
  int reports = 0;
  auto r = tt::tuner::tune_task(t, space, tuner, m, store.get(), o,
                                [&](const tt::tuner::TuneProgress&) { ++reports; });
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->progress.done, 37);
  EXPECT_EQ(m.calls, 37);
  EXPECT_EQ(reports, 5);  // 8, 8, 8, 8, 5
  EXPECT_EQ(*store->result_count(), 37);
  EXPECT_GT(r->progress.errors, 0);
  ASSERT_TRUE(r->best_config.has_value());
  auto best = *store->best(ss::workload_key(t), "", "test-device");
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.config_index, r->best_config->index);
}

TEST(TuningLoop, ResumeSkipsMeasuredConfigsAndFinishesTheBudget) {
  const ss::Task t = task();
  auto space = *ss::make_config_space(t);
  const std::string path = tt::testing::fresh_db_path("loop_resume");
  tt::tuner::TuneOptions o;
  o.trials = 20;
  {
    auto store = *tt::records::RecordStore::open(path);
    tt::tuner::RandomTuner tuner(space, 1);
    TableMeasurer m;
    o.trials = 12;
    ASSERT_TRUE(tt::tuner::tune_task(t, space, tuner, m, store.get(), o, nullptr).has_value());
  }
  auto store = *tt::records::RecordStore::open(path);
  auto first = *store->all_records();
  tt::tuner::RandomTuner tuner(space, 1);  // same seed: would propose the same configs again
  TableMeasurer m;
  o.trials = 20;
  auto r = tt::tuner::tune_task(t, space, tuner, m, store.get(), o, nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->resumed, 12);
  EXPECT_EQ(m.calls, 8);
  auto all = *store->all_records();
  ASSERT_EQ(all.size(), 20u);
  std::set<int64_t> indices;
  for (const auto& rec : all) indices.insert(rec.config_index);
  EXPECT_EQ(indices.size(), 20u) << "a resumed run measured a config twice";
}

// Records are per thread count: a run for two threads neither skips nor counts the
// configs a one-thread run measured, and its best is its own; the one-thread history is still
// whole for a one-thread run.
TEST(TuningLoop, ResumeCountsOnlyResultsOfTheRunsThreadCount) {
  const ss::Task t = task();
  auto space = *ss::make_config_space(t);
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("loop_threads"));
  tt::tuner::TuneOptions o;
  o.trials = 12;
  o.run_id = "random-seed1";
  {
    tt::tuner::RandomTuner tuner(space, 1);
    TableMeasurer m;
    ASSERT_TRUE(tt::tuner::tune_task(t, space, tuner, m, store.get(), o, nullptr).has_value());
    EXPECT_EQ(m.calls, 12);
  }
  tt::tuner::RandomTuner two(space, 1);  // same seed: proposes the one-thread run's configs
  TableMeasurer m2;
  m2.threads_ = 2;
  auto r = tt::tuner::tune_task(t, space, two, m2, store.get(), o, nullptr);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->resumed, 0);
  EXPECT_EQ(r->replayed, 0);
  EXPECT_EQ(m2.calls, 12) << "configs timed on one thread were skipped for two";
  auto best2 = *store->best(ss::workload_key(t), "", "test-device", 2);
  ASSERT_TRUE(best2.has_value());
  EXPECT_EQ(best2->record.result.threads, 2);
  EXPECT_EQ(*store->result_count(), 24);

  tt::tuner::RandomTuner one(space, 1);
  TableMeasurer m1;
  auto again = tt::tuner::tune_task(t, space, one, m1, store.get(), o, nullptr);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->resumed, 12);
  EXPECT_EQ(again->replayed, 12);
  EXPECT_EQ(m1.calls, 0);
  EXPECT_EQ((*store->best(ss::workload_key(t), "", "test-device", 1))->record.result.threads, 1);
  EXPECT_EQ(*store->measured_indices(*store->ensure_task(tt::records::task_info(t, space)),
                                     "test-device", 3),
            std::set<int64_t>());
}

TEST(TuningLoop, EarlyStoppingAndBadOptions) {
  const ss::Task t = task();
  auto space = *ss::make_config_space(t);
  tt::tuner::GridTuner tuner(space);
  TableMeasurer m;
  tt::tuner::TuneOptions o;
  o.trials = 1000;
  o.batch_size = 1;
  o.early_stopping = 10;
  auto r = tt::tuner::tune_task(t, space, tuner, m, nullptr, o, nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_LT(r->progress.done, 1000);
  o.trials = 0;
  auto bad = tt::tuner::tune_task(t, space, tuner, m, nullptr, o, nullptr);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("trials = 0, must be >= 1"), std::string::npos);
}

TEST(TuningLoop, RealMeasurementsEndToEnd) {
  const ss::Task t = task();
  auto space = *ss::make_config_space(t);
  tt::measure::MeasureOptions mo;
  mo.timing.number = 1;
  mo.timing.repeat = 3;
  mo.timing.min_repeat_ms = 1;
  tt::tuner::LocalMeasurerAdapter m(*tt::measure::LocalMeasurer::create(t, mo));
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("loop_real"));
  tt::tuner::RandomTuner tuner(space, 5);
  tt::tuner::TuneOptions o;
  o.trials = 6;
  o.batch_size = 3;
  auto r = tt::tuner::tune_task(t, space, tuner, m, store.get(), o, nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->progress.errors, 0);
  EXPECT_GT(r->progress.best_gflops, 0.1);
  auto records = store->all_records();
  ASSERT_TRUE(records.has_value());
  for (const auto& rec : *records) {
    EXPECT_EQ(rec.result.error_no, ss::MeasureErrorNo::kNoError) << rec.result.error_msg;
    EXPECT_GT(rec.result.compile_s, 0);
  }
}

}  // namespace
