// Interpreter loops for reductions, arg-reductions, padding, expand, tile and the
// normalisations (layer and instance). Sums accumulate in double.
#include <cmath>

#include "compiler/graph/kernels.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph::kernels {
namespace {

// For every input element, the output element it reduces into (the kept axes' coordinates).
std::vector<int64_t> reduced_index(const Shape& in, const std::vector<bool>& reduced) {
  Shape kept;
  for (size_t d = 0; d < in.size(); ++d) kept.push_back(reduced[d] ? 1 : in[d]);
  const auto kept_strides = strides_of(kept);
  std::vector<int64_t> stride(in.size());
  for (size_t d = 0; d < in.size(); ++d) stride[d] = reduced[d] ? 0 : kept_strides[d];
  const int64_t total = num_elements(in);
  std::vector<int64_t> map(static_cast<size_t>(total));
  std::vector<int64_t> idx(in.size(), 0);
  int64_t dst = 0;
  for (int64_t i = 0; i < total; ++i) {
    map[static_cast<size_t>(i)] = dst;
    for (int64_t d = static_cast<int64_t>(in.size()) - 1; d >= 0; --d) {
      ++idx[d];
      dst += stride[d];
      if (idx[d] < in[d]) break;
      dst -= stride[d] * idx[d];
      idx[d] = 0;
    }
  }
  return map;
}

}  // namespace

Tensor reduce(ReduceOp op, const Tensor& x, const ReduceAttrs& a, const Shape& out_shape) {
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t axis : a.axes) reduced[axis] = true;
  const auto map = reduced_index(x.shape, reduced);
  const int64_t n_out = num_elements(out_shape);
  const double count =
      static_cast<double>(x.size()) / static_cast<double>(std::max<int64_t>(n_out, 1));
  const bool is_extreme = op == ReduceOp::kMax || op == ReduceOp::kMin;
  const double init = op == ReduceOp::kProd  ? 1.0
                      : op == ReduceOp::kMax ? -INFINITY
                      : op == ReduceOp::kMin ? INFINITY
                                             : 0.0;
  std::vector<double> acc(static_cast<size_t>(n_out), init);
  std::vector<bool> seen_nan(is_extreme ? acc.size() : 0, false);
  // log-sum-exp subtracts each output's maximum first, so that exp cannot overflow.
  std::vector<double> shift(op == ReduceOp::kLogSumExp ? acc.size() : 0, -INFINITY);
  for (size_t i = 0; i < map.size() && !shift.empty(); ++i)
    shift[map[i]] = std::max(shift[map[i]], x.at(static_cast<int64_t>(i)));
  for (double& s : shift)
    if (!std::isfinite(s)) s = 0;
  for (size_t i = 0; i < map.size(); ++i) {
    const double v = x.at(static_cast<int64_t>(i));
    double& r = acc[map[i]];
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
      case ReduceOp::kLogSum:
        r += v;
        break;
      case ReduceOp::kL2:
      case ReduceOp::kSumSquare:
        r += v * v;
        break;
      case ReduceOp::kL1:
        r += std::fabs(v);
        break;
      case ReduceOp::kLogSumExp:
        r += std::exp(v - shift[map[i]]);
        break;
      case ReduceOp::kProd:
        r *= v;
        break;
      case ReduceOp::kMax:
        if (std::isnan(v)) seen_nan[map[i]] = true;
        r = std::max(r, v);
        break;
      case ReduceOp::kMin:
        if (std::isnan(v)) seen_nan[map[i]] = true;
        r = std::min(r, v);
        break;
    }
  }
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  for (size_t i = 0; i < acc.size(); ++i) {
    double r = acc[i];
    if (op == ReduceOp::kMean) r /= count;
    if (op == ReduceOp::kL2) r = std::sqrt(r);
    if (op == ReduceOp::kLogSum) r = std::log(r);
    if (op == ReduceOp::kLogSumExp) r = std::log(r) + shift[i];
    if (is_extreme && seen_nan[i]) r = NAN;
    if (is_float(x.dtype))
      out.f32[i] = static_cast<float>(r);
    else
      out.i64[i] = float_to_integer(x.dtype, r);
  }
  // Integer sums and products are exact in int64 (two's complement), not via double.
  if (!is_float(x.dtype) &&
      (op == ReduceOp::kSum || op == ReduceOp::kProd || op == ReduceOp::kSumSquare)) {
    std::vector<uint64_t> exact(acc.size(), op == ReduceOp::kProd ? 1 : 0);
    for (size_t i = 0; i < map.size(); ++i) {
      const auto v = static_cast<uint64_t>(x.i64[i]);
      exact[map[i]] = op == ReduceOp::kProd        ? exact[map[i]] * v
                      : op == ReduceOp::kSumSquare ? exact[map[i]] + v * v
                                                   : exact[map[i]] + v;
    }
    for (size_t i = 0; i < exact.size(); ++i)
      out.i64[i] = wrap_integer(x.dtype, static_cast<int64_t>(exact[i]));
  }
  return out;
}

Tensor arg_reduce(ArgReduceOp op, const Tensor& x, const ArgReduceAttrs& a,
                  const Shape& out_shape) {
  const int64_t axis = normalize_axis(a.axis, x.shape.size());
  const int64_t outer = num_elements(Shape(x.shape.begin(), x.shape.begin() + axis));
  const int64_t len = x.shape[axis];
  const int64_t inner = num_elements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  Tensor out = Tensor::zeros(DType::kInt64, out_shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t best = 0;
      double best_v = x.at(o * len * inner + in);
      for (int64_t k = 1; k < len; ++k) {
        const double v = x.at((o * len + k) * inner + in);
        const bool better = op == ArgReduceOp::kArgMax
                                ? (v > best_v || (a.select_last_index && v == best_v))
                                : (v < best_v || (a.select_last_index && v == best_v));
        if (better) best = k, best_v = v;
      }
      out.i64[o * inner + in] = best;
    }
  return out;
}

Tensor pad(const Tensor& x, const PadAttrs& a, const Shape& out_shape) {
  const int64_t rank = x.shape.size();
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  const auto in_strides = strides_of(x.shape);
  const int64_t total = num_elements(out_shape);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t src = 0;
    bool inside = true;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t c = idx[d] - a.pads[d];
      const int64_t size = x.shape[d];
      if (c < 0 || c >= size) {
        if (a.mode == 0) {
          inside = false;
          break;
        }
        if (a.mode == 1)  // reflect about the edge elements (which are not repeated)
          c = c < 0 ? -c : 2 * (size - 1) - c;
        else  // edge
          c = c < 0 ? 0 : size - 1;
      }
      src += c * in_strides[d];
    }
    if (is_float(x.dtype))
      out.f32[i] = inside ? x.f32[src] : static_cast<float>(a.value);
    else
      out.i64[i] = inside ? x.i64[src] : float_to_integer(x.dtype, a.value);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Tensor expand(const Tensor& x, const Shape& out_shape) {
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  const auto map = broadcast_source_index(x.shape, out_shape);
  for (size_t i = 0; i < map.size(); ++i) {
    if (is_float(x.dtype))
      out.f32[i] = x.f32[map[i]];
    else
      out.i64[i] = x.i64[map[i]];
  }
  return out;
}

Tensor tile(const Tensor& x, const Shape& out_shape) {
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  const auto in_strides = strides_of(x.shape);
  const int64_t rank = x.shape.size(), total = num_elements(out_shape);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += (idx[d] % x.shape[d]) * in_strides[d];
    if (is_float(x.dtype))
      out.f32[i] = x.f32[src];
    else
      out.i64[i] = x.i64[src];
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Tensor layer_norm(const Tensor& x, const Tensor& scale, const Tensor* bias,
                  const LayerNormAttrs& a) {
  const int64_t axis = normalize_axis(a.axis, x.shape.size());
  const Shape inner_shape(x.shape.begin() + axis, x.shape.end());
  const int64_t inner = num_elements(inner_shape), outer = x.size() / std::max<int64_t>(inner, 1);
  const auto is = broadcast_source_index(scale.shape, inner_shape);
  const auto ib = bias ? broadcast_source_index(bias->shape, inner_shape) : std::vector<int64_t>{};
  Tensor out = Tensor::zeros(x.dtype, x.shape);
  for (int64_t o = 0; o < outer; ++o) {
    const float* row = x.f32.data() + o * inner;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) mean += row[i];
    mean /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(inner);
    const double inv = 1.0 / std::sqrt(var + a.epsilon);
    for (int64_t i = 0; i < inner; ++i) {
      double v = (row[i] - mean) * inv * scale.f32[is[i]];
      if (bias) v += bias->f32[ib[i]];
      out.f32[o * inner + i] = static_cast<float>(v);
    }
  }
  return out;
}

Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon) {
  const int64_t n = x.shape[0], c = x.shape[1], spatial = x.size() / std::max<int64_t>(n * c, 1);
  Tensor out = Tensor::zeros(x.dtype, x.shape);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (b * c + ch) * spatial;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < spatial; ++i) mean += x.f32[base + i];
      mean /= static_cast<double>(spatial);
      for (int64_t i = 0; i < spatial; ++i)
        var += (x.f32[base + i] - mean) * (x.f32[base + i] - mean);
      var /= static_cast<double>(spatial);
      const double inv = 1.0 / std::sqrt(var + epsilon);
      for (int64_t i = 0; i < spatial; ++i)
        out.f32[base + i] =
            static_cast<float>((x.f32[base + i] - mean) * inv * scale.f32[ch] + bias.f32[ch]);
    }
  return out;
}

}  // namespace tensortune::graph::kernels
