// The learning tuners: the XGBoost model ranks a synthetic space's best config highest,
// simulated annealing never proposes excluded configs, GA never repeats, both honour the seed,
// the model-based tuner beats random search on a known landscape, transfer learning loads other
// workloads' records, and bad options are named.
#include <gtest/gtest.h>

#include <set>

#include "schedule_space/features.h"
#include "tests/support/test_paths.h"
#include "tuner/ga_tuner.h"
#include "tuner/index_tuners.h"
#include "tuner/simulated_annealing.h"
#include "tuner/tuner_factory.h"
#include "tuner/tuning_loop.h"
#include "tuner/xgb_cost_model.h"
#include "tuner/xgb_tuner.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

ss::Task conv_task(int64_t c = 64, int64_t hw = 28, int64_t oc = 64) {
  return *ss::make_task(ss::kConv2dNCHWc, ss::square_conv2d(c, hw, oc, 3, 1),
                        ss::Target{"llvm -keys=cpu", 16});
}

/// A synthetic landscape over the real conv space: fast when oc_bn is 32, reg_n * reg_h
/// accumulators near 24, ic_bn large. The best config is known, and the cost model sees only
/// the template's features, as in real tuning.
double synthetic_gflops(const ss::Task& task, const ss::ConfigSpace& space, const ss::Config& c) {
  const auto f = ss::config_features(task, space, c);
  const double oc = f[1], acc = f[6], ic = f[0];  // log2(1+oc_bn), accumulators, log2(1+ic_bn)
  return 100.0 * std::exp(-std::pow(oc - std::log2(33.0), 2)) *
         std::exp(-std::pow((acc - 24) / 8.0, 2)) * (0.5 + 0.5 * ic / std::log2(65.0));
}

class SyntheticMeasurer final : public tt::tuner::Measurer {
 public:
  SyntheticMeasurer(const ss::Task& t) : task_(t) {}
  tt::Expected<std::vector<ss::MeasureResult>> measure(
      const ss::ConfigSpace& space, const std::vector<ss::Config>& configs) override {
    std::vector<ss::MeasureResult> out;
    for (const auto& c : configs) {
      ss::MeasureResult r;
      r.config_index = c.index;
      r.device_key = "synthetic";
      r.costs = {ss::task_flop(task_) / (synthetic_gflops(task_, space, c) * 1e9 + 1e3)};
      out.push_back(r);
    }
    return out;
  }
  std::string device_key() const override { return "synthetic"; }

 private:
  const ss::Task& task_;
};

TEST(XgbCostModel, RanksTheKnownBestConfigHighest) {
  const ss::Task task = conv_task();
  auto space = *ss::make_config_space(task);
  std::mt19937_64 rng(1);
  tt::tuner::FeatureMatrix train;
  std::vector<float> labels;
  std::vector<int64_t> valid;
  for (int64_t i = 0; i < space.size(); ++i)
    if (space.is_valid_index(i)) valid.push_back(i);
  std::shuffle(valid.begin(), valid.end(), rng);
  double top = 0;
  for (int64_t i : valid) top = std::max(top, synthetic_gflops(task, space, *space.config_at(i)));
  for (size_t k = 0; k < 300; ++k) {
    auto c = *space.config_at(valid[k]);
    train.append(ss::config_features(task, space, c));
    labels.push_back(static_cast<float>(synthetic_gflops(task, space, c) / top));
  }
  for (const char* loss : {"rank", "reg"}) {
    tt::tuner::XgbOptions o;
    o.loss = loss;
    auto model = *tt::tuner::XgbCostModel::create(o);
    ASSERT_TRUE(model->fit(train, labels).has_value());
    // Score the whole valid space: the truly best config must be among the model's top 2%.
    tt::tuner::FeatureMatrix all;
    int64_t best_index = -1;
    double best = -1;
    for (size_t k = 0; k < valid.size(); ++k) {
      auto c = *space.config_at(valid[k]);
      all.append(ss::config_features(task, space, c));
      const double g = synthetic_gflops(task, space, c);
      if (g > best) {
        best = g;
        best_index = static_cast<int64_t>(k);
      }
    }
    auto scores = *model->predict(all);
    const float best_score = scores[best_index];
    const auto above =
        std::count_if(scores.begin(), scores.end(), [&](float s) { return s > best_score; });
    EXPECT_LT(above, static_cast<long>(valid.size() / 50)) << loss;
  }
}

TEST(XgbCostModel, RecallMetric) {
  EXPECT_DOUBLE_EQ(tt::tuner::recall_at({3, 2, 1}, {0.9f, 0.5f, 0.1f}, 3), 1.0);
  EXPECT_LT(tt::tuner::recall_at({1, 2, 3}, {0.9f, 0.5f, 0.1f}, 1), 0.5);
}

TEST(SimulatedAnnealing, NeverProposesExcludedOrInvalidConfigs) {
  const ss::Task task = conv_task();
  auto space = *ss::make_config_space(task);
  std::set<int64_t> exclude;
  for (int64_t i = 0; i < space.size(); i += 2) exclude.insert(i);
  auto score = [&](const std::vector<int64_t>& idx) {
    std::vector<float> s;
    for (int64_t i : idx)
      s.push_back(static_cast<float>(synthetic_gflops(task, space, *space.config_at(i))));
    return s;
  };
  std::mt19937_64 rng(3);
  tt::tuner::SaOptions o;
  o.chains = 32;
  o.iterations = 100;
  auto out = tt::tuner::simulated_annealing(space, score, 40, exclude, o, rng);
  ASSERT_EQ(out.size(), 40u);
  std::set<int64_t> seen;
  for (const auto& p : out) {
    EXPECT_EQ(exclude.count(p.index), 0u);
    EXPECT_TRUE(space.is_valid_index(p.index));
    EXPECT_TRUE(seen.insert(p.index).second);
  }
  EXPECT_TRUE(
      std::is_sorted(out.begin(), out.end(), [](auto& a, auto& b) { return a.score > b.score; }));
}

std::vector<int64_t> run(tt::tuner::Tuner& tuner, tt::tuner::Measurer& m,
                         const ss::ConfigSpace& space, int trials) {
  std::vector<int64_t> seq;
  while (static_cast<int>(seq.size()) < trials && tuner.has_next()) {
    auto batch = tuner.next_batch(8);
    if (batch.empty()) break;
    tuner.update(batch, *m.measure(space, batch));
    for (const auto& c : batch) seq.push_back(c.index);
  }
  return seq;
}

TEST(GaTuner, NeverRepeatsAndHonoursTheSeed) {
  const ss::Task task = conv_task(16, 14, 32);
  auto space = *ss::make_config_space(task);
  SyntheticMeasurer m(task);
  tt::tuner::GaOptions o;
  o.pop_size = 20;
  o.seed = 9;
  auto a = *tt::tuner::GaTuner::create(space, o);
  auto b = *tt::tuner::GaTuner::create(space, o);
  auto sa = run(*a, m, space, 300), sb = run(*b, m, space, 300);
  EXPECT_EQ(sa, sb);
  std::set<int64_t> unique(sa.begin(), sa.end());
  EXPECT_EQ(unique.size(), sa.size()) << "GA measured a config twice";
  EXPECT_GE(a->generation(), 10);
  for (int64_t i : sa) EXPECT_TRUE(space.is_valid_index(i));
}

TEST(XgbTuner, NeverRepeatsHonoursTheSeedAndBeatsRandomSearch) {
  const ss::Task task = conv_task();
  auto space = *ss::make_config_space(task);
  SyntheticMeasurer m(task);
  double top = 0;
  for (int64_t i = 0; i < space.size(); ++i)
    if (space.is_valid_index(i))
      top = std::max(top, synthetic_gflops(task, space, *space.config_at(i)));
  auto trials_to = [&](const std::vector<int64_t>& seq, double frac) {
    for (size_t k = 0; k < seq.size(); ++k)
      if (synthetic_gflops(task, space, *space.config_at(seq[k])) >= frac * top)
        return static_cast<int>(k + 1);
    return static_cast<int>(seq.size()) * 2;
  };
  int xgb_total = 0, random_total = 0;
  for (uint64_t seed : {0, 1, 2}) {
    tt::tuner::XgbTunerOptions o;
    o.seed = seed;
    o.plan_size = 32;
    o.sa.iterations = 150;
    auto x = *tt::tuner::XgbTuner::create(task, space, o);
    auto seq = run(*x, m, space, 200);
    std::set<int64_t> unique(seq.begin(), seq.end());
    EXPECT_EQ(unique.size(), seq.size()) << "xgb measured a config twice";
    EXPECT_GE(x->fits(), 3);
    if (seed == 0) {
      auto again = *tt::tuner::XgbTuner::create(task, space, o);
      EXPECT_EQ(run(*again, m, space, 200), seq) << "same seed, different sequence";
    }
    tt::tuner::RandomTuner r(space, seed);
    xgb_total += trials_to(seq, 0.95);
    random_total += trials_to(run(r, m, space, 200), 0.95);
  }
  EXPECT_LT(xgb_total, random_total) << "xgb " << xgb_total << " vs random " << random_total;
}

TEST(Transfer, LoadsOtherWorkloadsRecordsOfTheSameTemplate) {
  const std::string path = tt::testing::fresh_db_path("transfer");
  auto store = *tt::records::RecordStore::open(path);
  const ss::Task other = conv_task(32, 14, 64);
  auto other_space = *ss::make_config_space(other);
  SyntheticMeasurer m(other);
  tt::tuner::RandomTuner r(other_space, 4);
  tt::tuner::TuneOptions to;
  to.trials = 40;
  to.run_id = "random-seed4-1";
  ASSERT_TRUE(tt::tuner::tune_task(other, other_space, r, m, store.get(), to, nullptr).has_value());
  // A dense task's records must not leak into a conv task's transfer set.
  const ss::Task dense = *ss::make_task(ss::kDensePack, ss::DenseWorkload{1, 64, 64},
                                        ss::Target{"llvm -keys=cpu", 16});
  auto dense_space = *ss::make_config_space(dense);
  SyntheticMeasurer dm(dense);
  tt::tuner::RandomTuner dr(dense_space, 4);
  to.trials = 10;
  ASSERT_TRUE(
      tt::tuner::tune_task(dense, dense_space, dr, dm, store.get(), to, nullptr).has_value());

  const ss::Task task = conv_task();
  auto set = tt::tuner::load_transfer_samples(*store, task);
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(set->workloads, 1);
  EXPECT_EQ(set->labels.size(), 40u);
  EXPECT_FLOAT_EQ(*std::max_element(set->labels.begin(), set->labels.end()), 1.0f);
  auto space = *ss::make_config_space(task);
  tt::tuner::TunerOptions o;
  o.name = "xgb";
  o.transfer = true;
  auto tuner = tt::tuner::make_tuner(task, space, o, store.get());
  ASSERT_TRUE(tuner.has_value()) << tuner.error().message;
  auto* xgb = dynamic_cast<tt::tuner::XgbTuner*>(tuner->get());
  ASSERT_NE(xgb, nullptr);
  EXPECT_EQ(xgb->fits(), 1);  // pre-trained before any measurement of its own
  EXPECT_FALSE(xgb->plan().empty());
  // The own task's records at the thread count being tuned never count as transfer data (the
  // tuning loop replays them); at another count they do, normalised within that count.
  EXPECT_EQ(tt::tuner::load_transfer_samples(*store, other)->labels.size(), 0u);
  EXPECT_EQ(tt::tuner::load_transfer_samples(*store, other, 1)->labels.size(), 0u);
  auto at_two = tt::tuner::load_transfer_samples(*store, other, 2);
  ASSERT_TRUE(at_two.has_value());
  EXPECT_EQ(at_two->workloads, 1);
  EXPECT_EQ(at_two->labels.size(), 40u);
  EXPECT_FLOAT_EQ(*std::max_element(at_two->labels.begin(), at_two->labels.end()), 1.0f);
  // Only the measuring device's records: another machine kind's rank configs differently.
  EXPECT_EQ(tt::tuner::load_transfer_samples(*store, task, 1, m.device_key())->labels.size(), 40u);
  EXPECT_EQ(tt::tuner::load_transfer_samples(*store, task, 1, "another-kind")->labels.size(), 0u);
}

TEST(TunerFactory, BadOptionsAreNamed) {
  const ss::Task task = conv_task();
  auto space = *ss::make_config_space(task);
  tt::tuner::TunerOptions o;
  o.name = "annealing";
  auto bad = tt::tuner::make_tuner(task, space, o, nullptr);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("--tuner = 'annealing' is not one of grid, random, ga, xgb"),
            std::string::npos);
  o.name = "random";
  o.transfer = true;
  bad = tt::tuner::make_tuner(task, space, o, nullptr);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("--transfer needs --tuner xgb"), std::string::npos);
  o.name = "xgb";
  o.transfer = false;
  o.xgb_loss = "hinge";
  bad = tt::tuner::make_tuner(task, space, o, nullptr);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("xgb loss = 'hinge'"), std::string::npos);
  o.xgb_loss = "rank";
  o.plan_size = 0;
  EXPECT_FALSE(tt::tuner::make_tuner(task, space, o, nullptr).has_value());
}

}  // namespace
