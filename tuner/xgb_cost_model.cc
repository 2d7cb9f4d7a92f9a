#include "tuner/xgb_cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <numeric>

namespace tensortune::tuner {

void FeatureMatrix::append(const std::vector<float>& row) {
  if (rows == 0) cols = row.size();
  TT_CHECK(row.size() == cols) << "feature row of " << row.size() << " values in a matrix of "
                               << cols;
  values.insert(values.end(), row.begin(), row.end());
  ++rows;
}

double recall_at(const std::vector<float>& scores, const std::vector<float>& labels, size_t n) {
  const size_t m = scores.size();
  if (m == 0) return 0;
  n = std::min(n, m);
  std::vector<size_t> by_score(m), by_label(m);
  std::iota(by_score.begin(), by_score.end(), 0);
  std::iota(by_label.begin(), by_label.end(), 0);
  std::stable_sort(by_score.begin(), by_score.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::stable_sort(by_label.begin(), by_label.end(),
                   [&](size_t a, size_t b) { return labels[a] > labels[b]; });
  std::vector<size_t> true_rank(m);
  for (size_t r = 0; r < m; ++r) true_rank[by_label[r]] = r;
  // r(i) = #{j <= i : true_rank(by_score[j]) <= i} / (i + 1), averaged over the first n.
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t hits = 0;
    for (size_t j = 0; j <= i; ++j) hits += true_rank[by_score[j]] <= i;
    sum += static_cast<double>(hits) / static_cast<double>(i + 1);
  }
  return sum / static_cast<double>(n);
}

namespace {

Error xgb_error(const char* what) {
  return internal_error(std::string("xgboost: ") + what + ": " + XGBGetLastError());
}

/// Owns a DMatrix handle.
struct DMatrix {
  DMatrixHandle h = nullptr;
  ~DMatrix() {
    if (h) XGDMatrixFree(h);
  }
};

Status make_dmatrix(const FeatureMatrix& f, DMatrix& out) {
  if (XGDMatrixCreateFromMat(f.values.data(), f.rows, f.cols,
                             std::numeric_limits<float>::quiet_NaN(), &out.h) != 0)
    return xgb_error("creating a matrix");
  return ok_status();
}

}  // namespace

Expected<std::unique_ptr<XgbCostModel>> XgbCostModel::create(XgbOptions options) {
  if (options.loss != "rank" && options.loss != "reg")
    return invalid_argument("xgb loss = '" + options.loss + "' is not rank or reg");
  if (options.max_rounds < 1) return invalid_argument("xgb max_rounds must be >= 1");
  return std::unique_ptr<XgbCostModel>(new XgbCostModel(std::move(options)));
}

void XgbCostModel::FreeBooster::operator()(void* booster) const {
  XGBoosterFree(static_cast<BoosterHandle>(booster));
}

XgbCostModel::~XgbCostModel() = default;

Status XgbCostModel::fit(const FeatureMatrix& features, const std::vector<float>& labels) {
  if (features.rows != labels.size())
    return internal_error("fit: " + std::to_string(features.rows) + " rows but " +
                          std::to_string(labels.size()) + " labels");
  if (features.rows < 2)
    return invalid_argument("fit: need at least 2 samples, got " + std::to_string(features.rows));
  DMatrix train;
  TT_RETURN_IF_ERROR(make_dmatrix(features, train));
  if (XGDMatrixSetFloatInfo(train.h, "label", labels.data(), labels.size()) != 0)
    return xgb_error("setting labels");
  if (options_.loss == "rank") {
    const unsigned group[] = {static_cast<unsigned>(features.rows)};
    if (XGDMatrixSetUIntInfo(train.h, "group", group, 1) != 0)
      return xgb_error("setting the ranking group");
  }
  BoosterHandle created = nullptr;
  if (XGBoosterCreate(&train.h, 1, &created) != 0) return xgb_error("creating the booster");
  std::unique_ptr<void, FreeBooster> owned(created);
  BoosterHandle booster = created;
  const std::pair<const char*, std::string> params[] = {
      {"max_depth", "3"},
      {"gamma", "0.0001"},
      {"min_child_weight", "1"},
      {"subsample", "1.0"},
      {"eta", "0.3"},
      {"lambda", "1.0"},
      {"alpha", "0"},
      {"objective", options_.loss == "rank" ? "rank:pairwise" : "reg:squarederror"},
      {"verbosity", "0"},
      {"nthread", std::to_string(std::max(1, options_.threads))},
      {"seed", std::to_string(options_.seed)},
  };
  for (const auto& [k, v] : params) {
    if (XGBoosterSetParam(booster, k, v.c_str()) != 0) return xgb_error("setting a parameter");
  }
  double best_recall = -1;
  int best_round = 0, rounds = 0;
  for (int round = 0; round < options_.max_rounds; ++round) {
    if (XGBoosterUpdateOneIter(booster, round, train.h) != 0) return xgb_error("training");
    rounds = round + 1;
    if (round % 2 != 1) continue;
    bst_ulong n = 0;
    const float* out = nullptr;
    if (XGBoosterPredict(booster, train.h, 0, 0, 0, &n, &out) != 0) return xgb_error("evaluating");
    const double recall = recall_at(std::vector<float>(out, out + n), labels, options_.recall_n);
    if (recall > best_recall + 1e-9) {
      best_recall = recall;
      best_round = round;
    } else if (round - best_round >= options_.early_stopping_rounds) {
      break;
    }
  }
  booster_ = std::move(owned);
  rounds_ = rounds;
  return ok_status();
}

Expected<std::vector<float>> XgbCostModel::predict(const FeatureMatrix& features) const {
  if (!booster_)
    return Error{ErrorCode::kFailedPrecondition, "predict before the model was trained"};
  if (features.rows == 0) return std::vector<float>{};
  DMatrix m;
  TT_RETURN_IF_ERROR(make_dmatrix(features, m));
  bst_ulong n = 0;
  const float* out = nullptr;
  if (XGBoosterPredict(static_cast<BoosterHandle>(booster_.get()), m.h, 0, 0, 0, &n, &out) != 0)
    return xgb_error("predicting");
  return std::vector<float>(out, out + n);
}

}  // namespace tensortune::tuner
