#include "tuner/xgb_tuner.h"

#include <algorithm>
#include <set>

#include "schedule_space/features.h"
#include "support/log.h"
#include "tuner/space_walk.h"

namespace tensortune::tuner {

namespace ss = schedule_space;

Expected<std::unique_ptr<XgbTuner>> XgbTuner::create(const ss::Task& task,
                                                     const ss::ConfigSpace& space,
                                                     XgbTunerOptions options) {
  if (options.plan_size < 1)
    return invalid_argument("plan_size = " + std::to_string(options.plan_size) + ", must be >= 1");
  if (options.epsilon < 0 || options.epsilon > 1)
    return invalid_argument("epsilon = " + std::to_string(options.epsilon) + ", must be in [0, 1]");
  XgbOptions xo;
  xo.loss = options.loss;
  xo.recall_n = static_cast<size_t>(options.plan_size);
  xo.seed = options.seed;
  TT_ASSIGN_OR_RETURN(auto model, XgbCostModel::create(xo));
  return std::unique_ptr<XgbTuner>(new XgbTuner(task, space, std::move(options), std::move(model)));
}

XgbTuner::XgbTuner(const ss::Task& task, const ss::ConfigSpace& space, XgbTunerOptions options,
                   std::unique_ptr<XgbCostModel> model)
    : task_(task),
      space_(space),
      options_(std::move(options)),
      model_(std::move(model)),
      visited_(space),
      rng_(options_.seed) {}

const std::vector<float>& XgbTuner::features(int64_t index) {
  auto it = feature_cache_.find(index);
  if (it != feature_cache_.end()) return it->second;
  if (feature_cache_.size() > 200000) feature_cache_.clear();
  return feature_cache_.emplace(index, ss::config_features(task_, space_, *space_.config_at(index)))
      .first->second;
}

void XgbTuner::skip(const std::set<int64_t>& indices) {
  for (int64_t i : indices) visited_.mark(i);
}

std::vector<ss::Config> XgbTuner::next_batch(int n) {
  std::vector<ss::Config> out;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  while (static_cast<int>(out.size()) < n && visited_.remaining() > 0) {
    std::optional<int64_t> pick;
    if (unit(rng_) >= options_.epsilon) {
      while (plan_pos_ < plan_.size() && !pick) {
        const int64_t i = plan_[plan_pos_++];
        if (!visited_.visited(i)) pick = i;
      }
    }
    if (!pick)
      pick = random_offered_index(space_, rng_, [&](int64_t i) { return !visited_.visited(i); });
    if (!pick) break;
    visited_.mark(*pick);
    out.push_back(*space_.config_at(*pick));
  }
  return out;
}

void XgbTuner::update(const std::vector<ss::Config>& configs,
                      const std::vector<ss::MeasureResult>& results) {
  const double flop = ss::task_flop(task_);
  for (size_t i = 0; i < configs.size() && i < results.size(); ++i) {
    visited_.mark(configs[i].index);
    sample_index_.push_back(configs[i].index);
    sample_gflops_.push_back(
        results[i].ok() && results[i].mean_cost() > 0 ? flop / results[i].mean_cost() / 1e9 : 0.0);
  }
  const bool any_success =
      std::any_of(sample_gflops_.begin(), sample_gflops_.end(), [](double g) { return g > 0; });
  if (any_success && sample_index_.size() > samples_at_last_fit_ &&
      sample_index_.size() >= static_cast<size_t>(options_.min_train_samples)) {
    Status st = refit_and_plan();
    if (!st.has_value())
      logger("tuner")->warn("xgb: {}; continuing with random proposals", st.error().message);
  }
}

Status XgbTuner::add_transfer_samples(const FeatureMatrix& features,
                                      const std::vector<float>& labels) {
  if (features.rows != labels.size()) return internal_error("transfer rows and labels differ");
  if (features.rows == 0) return ok_status();
  const size_t own_cols = ss::feature_names(task_.template_name).size();
  if (features.cols != own_cols)
    return invalid_argument("transfer features have " + std::to_string(features.cols) +
                            " columns, " + task_.template_name + " has " +
                            std::to_string(own_cols));
  for (size_t r = 0; r < features.rows; ++r) {
    transfer_features_.append(
        std::vector<float>(features.values.begin() + r * features.cols,
                           features.values.begin() + (r + 1) * features.cols));
    transfer_labels_.push_back(labels[r]);
  }
  if (transfer_labels_.size() >= 2) return refit_and_plan();
  return ok_status();
}

Status XgbTuner::refit_and_plan() {
  FeatureMatrix x = transfer_features_;
  std::vector<float> y = transfer_labels_;
  const double best = sample_gflops_.empty()
                          ? 0.0
                          : *std::max_element(sample_gflops_.begin(), sample_gflops_.end());
  for (size_t i = 0; i < sample_index_.size(); ++i) {
    x.append(features(sample_index_[i]));
    y.push_back(best > 0 ? static_cast<float>(sample_gflops_[i] / best) : 0.0f);
  }
  TT_RETURN_IF_ERROR(model_->fit(x, y));
  ++fits_;
  samples_at_last_fit_ = sample_index_.size();

  Status predict_status = ok_status();
  auto scorer = [&](const std::vector<int64_t>& indices) {
    FeatureMatrix f;
    for (int64_t i : indices) f.append(features(i));
    auto s = model_->predict(f);
    if (!s) {
      predict_status = s.error();
      return std::vector<float>(indices.size(), 0.0f);
    }
    return *s;
  };
  std::set<int64_t> exclude(sample_index_.begin(), sample_index_.end());
  for (int64_t i = 0; i < space_.size() && exclude.size() < static_cast<size_t>(space_.size()); ++i)
    if (visited_.visited(i)) exclude.insert(i);
  auto candidates = simulated_annealing(space_, scorer, 2 * static_cast<size_t>(options_.plan_size),
                                        exclude, options_.sa, rng_);
  TT_RETURN_IF_ERROR(predict_status);
  plan_ = diverse_pick(candidates, static_cast<size_t>(options_.plan_size));
  plan_pos_ = 0;
  return ok_status();
}

std::vector<int64_t> XgbTuner::diverse_pick(const std::vector<ScoredIndex>& candidates,
                                            size_t count) {
  if (candidates.empty()) return {};
  float lo = candidates.back().score, hi = candidates.front().score;
  for (const auto& c : candidates) {
    lo = std::min(lo, c.score);
    hi = std::max(hi, c.score);
  }
  const float range = hi - lo > 1e-12f ? hi - lo : 1.0f;
  std::vector<std::vector<int32_t>> digits;
  for (const auto& c : candidates) digits.push_back(space_.config_at(c.index)->digits);
  std::set<std::pair<size_t, int32_t>> covered;  // (knob, candidate) pairs already in the plan
  std::vector<bool> taken(candidates.size(), false);
  std::vector<int64_t> out;
  const double knobs = static_cast<double>(space_.knobs().size());
  while (out.size() < count && out.size() < candidates.size()) {
    size_t best = candidates.size();
    double best_value = -1e300;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (taken[c]) continue;
      int fresh = 0;
      for (size_t k = 0; k < digits[c].size(); ++k) fresh += covered.count({k, digits[c][k]}) == 0;
      const double value = (candidates[c].score - lo) / range + options_.diversity * fresh / knobs;
      if (value > best_value) {
        best_value = value;
        best = c;
      }
    }
    taken[best] = true;
    for (size_t k = 0; k < digits[best].size(); ++k) covered.insert({k, digits[best][k]});
    out.push_back(candidates[best].index);
  }
  return out;
}

}  // namespace tensortune::tuner
