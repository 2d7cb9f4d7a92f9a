#pragma once
/// \file
/// The model-based tuner (AutoTVM's XGBTuner): a cost model trained on every measurement so
/// far proposes the configs it predicts fastest.
///
/// - Until `min_train_samples` configs are measured (or with transfer data, from the start) it
///   proposes random configs.
/// - After every batch it retrains on all results of the task (failed configs count as zero
///   throughput; labels are throughput / best throughput) and plans the next configs:
///   simulated annealing finds 2 * plan_size high-scoring unvisited configs, and a diversity
///   pick orders plan_size of them, preferring ones that bring knob values the plan does not
///   have yet. AutoTVM refits only every plan_size (64) measurements, so its first 64 trials
///   are random; refitting per batch costs milliseconds and lets the model steer from the
///   second batch on.
/// - An epsilon share of each batch is uniformly random (exploration).
/// - Transfer learning: `add_transfer_samples` adds other workloads' records of the same
///   template and target to every training set, so the first plan is model-guided.

#include <memory>
#include <random>
#include <unordered_map>

#include "schedule_space/task.h"
#include "tuner/index_tuners.h"
#include "tuner/simulated_annealing.h"
#include "tuner/tuner.h"
#include "tuner/xgb_cost_model.h"

namespace tensortune::tuner {

struct XgbTunerOptions {
  int plan_size = 64;
  int min_train_samples = 8;
  double epsilon = 0.05;
  std::string loss = "rank";
  SaOptions sa;
  double diversity = 0.5;  ///< weight of new knob values against the normalised score
  uint64_t seed = 0;
};

class XgbTuner final : public Tuner {
 public:
  static Expected<std::unique_ptr<XgbTuner>> create(const schedule_space::Task& task,
                                                    const schedule_space::ConfigSpace& space,
                                                    XgbTunerOptions options);
  std::string name() const override { return "xgb"; }
  std::vector<schedule_space::Config> next_batch(int n) override;
  void update(const std::vector<schedule_space::Config>& configs,
              const std::vector<schedule_space::MeasureResult>& results) override;
  bool has_next() const override { return visited_.remaining() > 0; }
  void skip(const std::set<int64_t>& indices) override;

  /// Samples of other workloads (features from their own spaces, labels in [0, 1] relative to
  /// their own best). Trains the model at once when there are enough.
  Status add_transfer_samples(const FeatureMatrix& features, const std::vector<float>& labels);

  int fits() const { return fits_; }
  const std::vector<int64_t>& plan() const { return plan_; }

 private:
  XgbTuner(const schedule_space::Task& task, const schedule_space::ConfigSpace& space,
           XgbTunerOptions options, std::unique_ptr<XgbCostModel> model);
  const std::vector<float>& features(int64_t index);
  Status refit_and_plan();
  std::vector<int64_t> diverse_pick(const std::vector<ScoredIndex>& candidates, size_t count);

  const schedule_space::Task& task_;
  const schedule_space::ConfigSpace& space_;
  XgbTunerOptions options_;
  std::unique_ptr<XgbCostModel> model_;
  VisitedSet visited_;
  std::mt19937_64 rng_;
  std::unordered_map<int64_t, std::vector<float>> feature_cache_;
  std::vector<int64_t> sample_index_;
  std::vector<double> sample_gflops_;
  FeatureMatrix transfer_features_;
  std::vector<float> transfer_labels_;
  std::vector<int64_t> plan_;
  size_t plan_pos_ = 0;
  int fits_ = 0;
  size_t samples_at_last_fit_ = 0;
};

}  // namespace tensortune::tuner
