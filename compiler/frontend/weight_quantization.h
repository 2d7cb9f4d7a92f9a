#pragma once
/// \file
/// The arithmetic of quantizing one layer's weights (onnx_quantizer.h rewrites the model around
/// it): symmetric int8 weights per output channel or per tensor, the noise they add to the
/// layer's output, and the bias that cancels their mean error.
///
/// Noise model. A layer computes y_c = sum_k w_ck x_k. Rounding its activations (step s_x) adds
/// uniform noise of variance s_x^2 / 12 to each x_k, hence sum_k w_ck^2 s_x^2 / 12 to y_c;
/// rounding its weights (error d_ck) adds sum_k d_ck x_k, whose variance over the data is
/// sum_k d_ck^2 Var(x_k), taking the inputs as uncorrelated, plus the square of its mean
/// sum_k d_ck E(x_k) unless the bias cancels that. Both are summed over the output channels.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tensortune::frontend {

/// Where each element of a weight tensor sits: the output channel it feeds and the input
/// feature (activation channel) it multiplies.
struct WeightGeometry {
  enum class Form {
    kConv,             ///< OIHW..., O = out_channels, I = inputs / groups
    kInputsByOutputs,  ///< [K, N]: MatMul, Gemm with transB = 0
    kOutputsByInputs,  ///< [N, K]: Gemm with transB = 1
  };
  Form form = Form::kConv;
  int64_t out_channels = 1;
  int64_t inputs = 1;  ///< input features (all groups)
  int64_t groups = 1;
  int64_t spatial = 1;  ///< kernel elements per (output, input) pair

  int64_t out_channel(int64_t i) const;
  int64_t in_feature(int64_t i) const;
  int64_t size() const { return out_channels * (inputs / groups) * spatial; }
};

/// Per input feature, over every element and calibration sample of the activation.
struct FeatureMoments {
  std::vector<double> mean;
  std::vector<double> mean_square;
};

struct QuantizedWeight {
  std::vector<int64_t> values;  ///< in [-weight_max, weight_max]
  std::vector<float> scales;    ///< one per output channel, or one
  double scale_of(const WeightGeometry& g, int64_t i) const {
    return scales.size() == 1 ? scales[0] : scales[static_cast<size_t>(g.out_channel(i))];
  }
};

/// Symmetric quantization: each channel's (or the tensor's) largest magnitude maps to
/// weight_max, values round half to even.
QuantizedWeight quantize_weight(const std::vector<float>& w, const WeightGeometry& g,
                                bool per_channel, int weight_max);

struct LayerNoise {
  double activation = 0;  ///< output variance from rounding the activations
  double weight = 0;      ///< output variance from rounding the weights
};

/// The output noise of a layer (see the file comment). `moments` empty: weight noise unknown (0).
LayerNoise layer_noise(const std::vector<float>& w, const WeightGeometry& g,
                       const QuantizedWeight& q, double activation_scale,
                       const FeatureMoments& moments, bool mean_error_cancelled);

/// Per output channel, the mean of the output's error from the quantized weights:
/// sum_k E(x_k) (dequantized w_ck - w_ck). Subtracting it from the bias cancels it.
std::vector<double> mean_output_error(const std::vector<float>& w, const WeightGeometry& g,
                                      const QuantizedWeight& q, const FeatureMoments& moments);

}  // namespace tensortune::frontend
