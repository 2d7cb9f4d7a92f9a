#pragma once
/// \file
/// The cost-model interface the model-based tuner uses: a batch model over fixed-length feature
/// vectors that scores configs so that higher means faster. Scores only need to rank well;
/// they are not GFLOPS.

#include <string>
#include <vector>

#include "support/error.h"

namespace tensortune::tuner {

/// Row-major features: `rows` vectors of `cols` floats.
struct FeatureMatrix {
  std::vector<float> values;
  size_t rows = 0;
  size_t cols = 0;
  void append(const std::vector<float>& row);
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Trains from scratch on every sample. `labels` are relative throughputs in [0, 1]
  /// (failed configs 0).
  virtual Status fit(const FeatureMatrix& features, const std::vector<float>& labels) = 0;
  /// Scores for each row; fit() must have succeeded once.
  virtual Expected<std::vector<float>> predict(const FeatureMatrix& features) const = 0;
  virtual bool trained() const = 0;
};

/// AutoTVM's "a-recall@N" on a set: how well the top N by score overlaps the top N by label
/// (1 = the predicted order finds the best ones first).
double recall_at(const std::vector<float>& scores, const std::vector<float>& labels, size_t n);

}  // namespace tensortune::tuner
