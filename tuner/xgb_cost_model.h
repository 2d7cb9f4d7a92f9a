#pragma once
/// \file
/// A gradient-boosted-trees cost model on Debian's libxgboost (C API). AutoTVM's parameters:
/// depth-3 trees, eta 0.3, gamma 1e-4, min_child_weight 1, lambda 1; the objective is pairwise
/// ranking ("rank", the default: only the order of configs matters to the search) or squared
/// error regression ("reg"). Training stops early when a-recall@plan_size on the training set
/// has not improved for 20 rounds (checked every 2 rounds, at most 400), as AutoTVM does.

#include <memory>
#include <string>

#include "tuner/cost_model.h"

namespace tensortune::tuner {

struct XgbOptions {
  std::string loss = "rank";  ///< "rank" (rank:pairwise) or "reg" (reg:squarederror)
  int max_rounds = 400;
  int early_stopping_rounds = 20;
  size_t recall_n = 64;  ///< N of the early-stopping metric (the plan size)
  int threads = 1;       ///< XGBoost's nthread; tuning measures on the other core
  uint64_t seed = 0;
};

class XgbCostModel final : public CostModel {
 public:
  static Expected<std::unique_ptr<XgbCostModel>> create(XgbOptions options);
  ~XgbCostModel() override;
  Status fit(const FeatureMatrix& features, const std::vector<float>& labels) override;
  Expected<std::vector<float>> predict(const FeatureMatrix& features) const override;
  bool trained() const override { return booster_ != nullptr; }
  int rounds() const { return rounds_; }

 private:
  explicit XgbCostModel(XgbOptions options) : options_(std::move(options)) {}
  XgbOptions options_;
  /// Frees an XGBoost booster (a BoosterHandle; xgboost's header stays in the .cc).
  struct FreeBooster {
    void operator()(void* booster) const;
  };
  std::unique_ptr<void, FreeBooster> booster_;
  int rounds_ = 0;
};

}  // namespace tensortune::tuner
