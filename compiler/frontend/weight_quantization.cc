#include "compiler/frontend/weight_quantization.h"

#include <algorithm>
#include <cmath>

namespace tensortune::frontend {

int64_t WeightGeometry::out_channel(int64_t i) const {
  switch (form) {
    case Form::kConv:
      return i / ((inputs / groups) * spatial);
    case Form::kInputsByOutputs:
      return i % out_channels;
    case Form::kOutputsByInputs:
      return i / inputs;
  }
  return 0;
}

int64_t WeightGeometry::in_feature(int64_t i) const {
  switch (form) {
    case Form::kConv: {
      const int64_t per_group = inputs / groups;
      const int64_t group = out_channel(i) / (out_channels / groups);
      return group * per_group + i / spatial % per_group;
    }
    case Form::kInputsByOutputs:
      return i / out_channels;
    case Form::kOutputsByInputs:
      return i % inputs;
  }
  return 0;
}

QuantizedWeight quantize_weight(const std::vector<float>& w, const WeightGeometry& g,
                                bool per_channel, int weight_max) {
  const auto n = static_cast<int64_t>(w.size());
  const auto channel = [&](int64_t i) {
    return per_channel ? static_cast<size_t>(g.out_channel(i)) : size_t{0};
  };
  std::vector<double> largest(per_channel ? static_cast<size_t>(g.out_channels) : 1, 0.0);
  for (int64_t i = 0; i < n; ++i)
    largest[channel(i)] = std::max(largest[channel(i)], std::fabs(double(w[size_t(i)])));
  QuantizedWeight q;
  q.scales.resize(largest.size());
  for (size_t c = 0; c < largest.size(); ++c)
    q.scales[c] = largest[c] > 0 ? static_cast<float>(largest[c] / weight_max) : 1.0f;
  q.values.resize(w.size());
  for (int64_t i = 0; i < n; ++i)
    q.values[size_t(i)] =
        static_cast<int64_t>(std::clamp(std::nearbyint(double(w[size_t(i)]) / q.scales[channel(i)]),
                                        -double(weight_max), double(weight_max)));
  return q;
}

LayerNoise layer_noise(const std::vector<float>& w, const WeightGeometry& g,
                       const QuantizedWeight& q, double activation_scale,
                       const FeatureMoments& moments, bool mean_error_cancelled) {
  LayerNoise noise;
  const bool known = moments.mean.size() == static_cast<size_t>(g.inputs);
  for (size_t i = 0; i < w.size(); ++i) {
    const double wi = w[i];
    noise.activation += wi * wi;
    if (!known) continue;
    const auto k = static_cast<size_t>(g.in_feature(static_cast<int64_t>(i)));
    const double error = double(q.values[i]) * q.scale_of(g, static_cast<int64_t>(i)) - wi;
    const double mean = moments.mean[k];
    noise.weight += error * error * std::max(0.0, moments.mean_square[k] - mean * mean);
  }
  noise.activation *= activation_scale * activation_scale / 12;
  if (known && !mean_error_cancelled)
    for (double e : mean_output_error(w, g, q, moments)) noise.weight += e * e;
  return noise;
}

std::vector<double> mean_output_error(const std::vector<float>& w, const WeightGeometry& g,
                                      const QuantizedWeight& q, const FeatureMoments& moments) {
  std::vector<double> error(static_cast<size_t>(g.out_channels), 0.0);
  if (moments.mean.size() != static_cast<size_t>(g.inputs)) return error;
  for (size_t i = 0; i < w.size(); ++i) {
    const auto at = static_cast<int64_t>(i);
    const double d = double(q.values[i]) * q.scale_of(g, at) - double(w[i]);
    error[static_cast<size_t>(g.out_channel(at))] +=
        d * moments.mean[static_cast<size_t>(g.in_feature(at))];
  }
  return error;
}

}  // namespace tensortune::frontend
