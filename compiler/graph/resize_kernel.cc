// ONNX's Resize in the interpreter: separable interpolation. Each output coordinate of each
// axis maps back to an input coordinate (the coordinate transformation mode), which gives a
// few input indices and their weights (nearest: one, linear: two, cubic: four, with edge
// clamping); an output element sums the products of its axes' taps.
#include <cmath>
#include <cstring>

#include "compiler/graph/kernels.h"

namespace tensortune::graph::kernels {
namespace {

struct Tap {
  int64_t index;
  double weight;
};

float float_of_bits(int64_t bits) {
  float f;
  const auto b = static_cast<uint32_t>(bits);
  std::memcpy(&f, &b, 4);
  return f;
}

double original_coordinate(const ResizeAttrs& a, size_t axis, int64_t out, int64_t in_len,
                           int64_t out_len, double scale) {
  const double x = static_cast<double>(out);
  if (a.coord == 5) {  // tf_crop_and_resize: the region [start, end] of the axis, in [0, 1]
    const size_t rank = a.roi_bits.size() / 2;
    const double start = float_of_bits(a.roi_bits[axis]);
    const double end = float_of_bits(a.roi_bits[axis + rank]);
    const double span = double(in_len - 1);
    return out_len > 1 ? start * span + x * (end - start) * span / double(out_len - 1)
                       : 0.5 * (start + end) * span;
  }
  const double out_width = scale * static_cast<double>(in_len);  // as ONNX's reference has it
  switch (a.coord) {
    case 1:  // asymmetric
      return x / scale;
    case 2:  // align_corners
      return out_width == 1 ? 0.0 : x * double(in_len - 1) / (out_width - 1);
    case 3:  // pytorch_half_pixel
      return out_len > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
    case 4:  // tf_half_pixel_for_nn
      return (x + 0.5) / scale;
    case 0:  // half_pixel
      return (x + 0.5) / scale - 0.5;
  }
  // 5 (tf_crop_and_resize) returned above; shape inference admits no other mode.
  unsupported_operands("resize", static_cast<int>(a.coord), "not a coordinate transformation");
}

// No taps: the coordinate lies outside the input and the element is extrapolation_value
// (tf_crop_and_resize only).
std::vector<Tap> taps_of(const ResizeAttrs& a, double x, int64_t in_len) {
  if (a.coord == 5 && (x < 0 || x > double(in_len - 1))) return {};
  auto clamp = [&](int64_t i) { return std::min(std::max<int64_t>(i, 0), in_len - 1); };
  const double base = std::floor(x);
  const double ratio = x - base;
  const auto b = static_cast<int64_t>(base);
  if (a.mode == 0) {  // nearest
    bool up = false;
    if (a.nearest < 0 || a.nearest > 3)  // shape inference admits 0-3 only
      unsupported_operands("resize", static_cast<int>(a.nearest), "not a nearest mode");
    if (ratio != 0) {
      switch (a.nearest) {
        case 0:  // round_prefer_floor
          up = ratio > 0.5;
          break;
        case 1:  // round_prefer_ceil
          up = ratio >= 0.5;
          break;
        case 2:  // floor
          up = false;
          break;
        case 3:  // ceil
          up = true;
          break;
      }
    }
    return {{clamp(b + (up ? 1 : 0)), 1.0}};
  }
  if (a.mode == 1) return {{clamp(b), 1 - ratio}, {clamp(b + 1), ratio}};
  const double A = a.cubic_coeff_a, r = ratio, s = 1 - ratio;
  const double w[4] = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
                       ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * s - (A + 3)) * s * s + 1,
                       ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
  std::vector<Tap> taps;
  double kept = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t i = b - 1 + k;
    if (a.exclude_outside && (i < 0 || i >= in_len)) continue;
    taps.push_back({clamp(i), w[k]});
    kept += w[k];
  }
  if (a.exclude_outside && kept != 0)
    for (auto& t : taps) t.weight /= kept;
  return taps;
}

}  // namespace

Tensor resize(const Tensor& x, const ResizeAttrs& a) {
  const size_t rank = x.shape.size();
  std::vector<std::vector<std::vector<Tap>>> taps(rank);
  for (size_t d = 0; d < rank; ++d) {
    const double scale = float_of_bits(a.scale_bits[d]);
    for (int64_t o = 0; o < a.sizes[d]; ++o) {
      if (a.sizes[d] == x.shape[d] && scale == 1.0 && a.coord != 5) {
        taps[d].push_back({{o, 1.0}});
        continue;
      }
      taps[d].push_back(
          taps_of(a, original_coordinate(a, d, o, x.shape[d], a.sizes[d], scale), x.shape[d]));
    }
  }
  Tensor out = Tensor::zeros(x.dtype, a.sizes);
  const auto in_strides = strides_of(x.shape);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < out.size(); ++i) {
    // Sum over every combination of the axes' taps (an odometer over tap positions).
    std::vector<size_t> pick(rank, 0);
    double sum = 0;
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) outside = outside || taps[d][idx[d]].empty();
    if (outside) sum = a.extrapolation_value;
    while (!outside) {
      double w = 1;
      int64_t src = 0;
      for (size_t d = 0; d < rank; ++d) {
        const Tap& t = taps[d][idx[d]][pick[d]];
        w *= t.weight;
        src += t.index * in_strides[d];
      }
      sum += w * x.f32[src];
      bool done = true;
      for (size_t d = rank; d-- > 0;) {
        if (++pick[d] < taps[d][idx[d]].size()) {
          done = false;
          break;
        }
        pick[d] = 0;
      }
      if (done) break;
    }
    out.f32[i] = static_cast<float>(sum);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++idx[d] < a.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace tensortune::graph::kernels
