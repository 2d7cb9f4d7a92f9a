// Interpreter loops for element-wise, data-movement and shape operators.
#include <algorithm>
#include <cmath>

#include "compiler/graph/kernels.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph::kernels {
namespace {

// Strides of `in` seen from an output of `out_shape` under numpy broadcasting (0 where the
// input dimension is broadcast or missing).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out_shape) {
  const auto s = strides_of(in);
  std::vector<int64_t> r(out_shape.size(), 0);
  const size_t lead = out_shape.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) r[lead + i] = in[i] == 1 ? 0 : s[i];
  return r;
}

// Calls fn(out_index, a_index, b_index) for every output element, in row-major order.
// Not inlined: GCC 12 reports a false -Wfree-nonheap-object on the odometer when inlined.
template <typename Fn>
[[gnu::noinline]] void for_each_broadcast(const Shape& out_shape, const std::vector<int64_t>& sa,
                                          const std::vector<int64_t>& sb, Fn fn) {
  const int64_t total = num_elements(out_shape);
  const size_t rank = out_shape.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < total; ++i) {
    fn(i, ia, ib);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      ++idx[d];
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < out_shape[d]) break;
      ia -= sa[d] * idx[d];
      ib -= sb[d] * idx[d];
      idx[d] = 0;
    }
  }
}

// Integer arithmetic in two's complement (signed overflow is undefined in C++; ONNX wraps).
template <typename T, typename Op>
T wrapping(T x, T y, Op op) {
  return static_cast<T>(op(static_cast<uint64_t>(x), static_cast<uint64_t>(y)));
}

// Fills `out` (already sized); false on an integer division by zero.
template <typename T>
bool binary_values(ArithmeticOp op, const std::vector<T>& a, const Shape& as,
                   const std::vector<T>& b, const Shape& bs, const Shape& out_shape,
                   std::vector<T>& out) {
  bool div_by_zero = false;
  auto apply = [&](T x, T y) -> T {
    switch (op) {
      case ArithmeticOp::kAdd:
        if constexpr (std::is_integral_v<T>)
          return wrapping(x, y, [](uint64_t p, uint64_t q) { return p + q; });
        return x + y;
      case ArithmeticOp::kSubtract:
        if constexpr (std::is_integral_v<T>)
          return wrapping(x, y, [](uint64_t p, uint64_t q) { return p - q; });
        return x - y;
      case ArithmeticOp::kMultiply:
        if constexpr (std::is_integral_v<T>)
          return wrapping(x, y, [](uint64_t p, uint64_t q) { return p * q; });
        return x * y;
      case ArithmeticOp::kDivide:
        if constexpr (std::is_integral_v<T>) {
          if (y == 0) {
            div_by_zero = true;
            return 0;
          }
          // INT64_MIN / -1 traps on x86; two's complement says INT64_MIN.
          if (y == -1) return wrapping(T{0}, x, [](uint64_t p, uint64_t q) { return p - q; });
        }
        return x / y;
    }
    unsupported_operands("arithmetic", static_cast<int>(op), "not an ArithmeticOp");
  };
  if (as == out_shape && bs == out_shape) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = apply(a[i], b[i]);
  } else {
    for_each_broadcast(out_shape, broadcast_strides(as, out_shape),
                       broadcast_strides(bs, out_shape),
                       [&](int64_t i, int64_t ia, int64_t ib) { out[i] = apply(a[ia], b[ib]); });
  }
  return !div_by_zero;
}

}  // namespace

Tensor activation(ActivationOp op, const Tensor& x, const Attrs& attrs) {
  if (op == ActivationOp::kIdentity) return x;
  Tensor out = x;
  const auto clip = attrs_as<ClipAttrs>(attrs);
  const auto hard_sigmoid = attrs_as<HardSigmoidAttrs>(attrs);
  const float lo = static_cast<float>(clip.min), hi = static_cast<float>(clip.max);
  if (!is_float(x.dtype)) {  // relu, clip: bounds beyond the dtype's range do not apply
    for (int64_t& v : out.i64) {
      switch (op) {
        case ActivationOp::kRelu:
          v = std::max<int64_t>(v, 0);
          break;
        case ActivationOp::kClip:
          if (clip.min > double(v)) v = float_to_integer(out.dtype, std::ceil(clip.min));
          if (clip.max < double(v)) v = float_to_integer(out.dtype, std::floor(clip.max));
          break;
        case ActivationOp::kSigmoid:
        case ActivationOp::kHardSigmoid:
        case ActivationOp::kHardSwish:
        case ActivationOp::kIdentity:
          unsupported_operands("activation", static_cast<int>(op),
                               "shape inference gives it float operands only");
      }
    }
    return out;
  }
  const float alpha = static_cast<float>(hard_sigmoid.alpha);
  const float beta = static_cast<float>(hard_sigmoid.beta);
  for (float& v : out.f32) {
    switch (op) {
      case ActivationOp::kRelu:
        v = v > 0.0f ? v : 0.0f;
        break;
      case ActivationOp::kClip:
        v = std::min(std::max(v, lo), hi);
        break;
      case ActivationOp::kSigmoid:
        v = static_cast<float>(1.0 / (1.0 + std::exp(-double(v))));
        break;
      case ActivationOp::kHardSigmoid:
        v = std::max(0.0f, std::min(1.0f, alpha * v + beta));
        break;
      case ActivationOp::kHardSwish:
        v = v * std::max(0.0f, std::min(1.0f, v / 6.0f + 0.5f));
        break;
      case ActivationOp::kIdentity:
        break;
    }
  }
  return out;
}

Expected<Tensor> arithmetic(ArithmeticOp op, const Tensor& a, const Tensor& b,
                            const Shape& out_shape) {
  Tensor out = Tensor::zeros(a.dtype, out_shape);
  const bool ok = is_float(a.dtype)
                      ? binary_values(op, a.f32, a.shape, b.f32, b.shape, out_shape, out.f32)
                      : binary_values(op, a.i64, a.shape, b.i64, b.shape, out_shape, out.i64);
  if (!ok) return invalid_argument("integer division by zero");
  for (int64_t& v : out.i64) v = wrap_integer(out.dtype, v);
  return out;
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out_shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out_shape[i] = x.shape[perm[i]];
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  const auto in_strides = strides_of(x.shape);
  std::vector<int64_t> permuted(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) permuted[i] = in_strides[perm[i]];
  const std::vector<int64_t> none(perm.size(), 0);
  for_each_broadcast(out_shape, permuted, none, [&](int64_t i, int64_t src, int64_t) {
    if (x.dtype == DType::kFloat32)
      out.f32[i] = x.f32[src];
    else
      out.i64[i] = x.i64[src];
  });
  return out;
}

Tensor concat(const std::vector<const Tensor*>& xs, int64_t axis, const Shape& out_shape) {
  Tensor out = Tensor::zeros(xs[0]->dtype, out_shape);
  const int64_t outer = num_elements(Shape(out_shape.begin(), out_shape.begin() + axis));
  const int64_t inner = num_elements(Shape(out_shape.begin() + axis + 1, out_shape.end()));
  int64_t offset = 0;
  for (const Tensor* x : xs) {
    const int64_t chunk = x->shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t dst = o * out_shape[axis] * inner + offset, src = o * chunk;
      if (x->dtype == DType::kFloat32)
        std::copy_n(x->f32.begin() + src, chunk, out.f32.begin() + dst);
      else
        std::copy_n(x->i64.begin() + src, chunk, out.i64.begin() + dst);
    }
    offset += chunk;
  }
  return out;
}

Tensor layout_transform(const Tensor& x, int64_t from_block, int64_t to_block,
                        const Shape& out_shape) {
  const int64_t N = x.shape[0], H = x.shape[2], W = x.shape[3];
  const int64_t C = from_block ? x.shape[1] * from_block : x.shape[1];
  const int64_t fb = std::max<int64_t>(from_block, 1), tb = std::max<int64_t>(to_block, 1);
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  // Offset of (n, c, hw) in NCHW[b]c with b = 1 meaning plain NCHW.
  auto offset = [&](int64_t n, int64_t c, int64_t hw, int64_t b) {
    return ((n * (C / b) + c / b) * H * W + hw) * b + c % b;
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t hw = 0; hw < H * W; ++hw)
        if (is_float(x.dtype))
          out.f32[offset(n, c, hw, tb)] = x.f32[offset(n, c, hw, fb)];
        else
          out.i64[offset(n, c, hw, tb)] = x.i64[offset(n, c, hw, fb)];
  return out;
}

Tensor reshape(const Tensor& x, const Shape& out_shape) {
  Tensor out = x;
  out.shape = out_shape;
  return out;
}

Tensor shape_of(const Tensor& x, const ShapeAttrs& a) {
  const int64_t rank = x.shape.size();
  int64_t start = a.start, end = a.end.value_or(rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims(x.shape.begin() + start, x.shape.begin() + std::max(start, end));
  const int64_t n = dims.size();
  return Tensor::from_ints({n}, std::move(dims));
}

Tensor cast(const Tensor& x, DType to) {
  if (x.dtype == to) return x;
  Tensor out = Tensor::zeros(to, x.shape);
  if (is_float(to) && is_float(x.dtype)) {
    for (size_t i = 0; i < x.f32.size(); ++i) out.f32[i] = round_float(to, x.f32[i]);
  } else if (is_float(to)) {
    for (size_t i = 0; i < x.i64.size(); ++i)
      out.f32[i] = round_float(to, static_cast<float>(x.i64[i]));
  } else if (is_float(x.dtype)) {
    for (size_t i = 0; i < x.f32.size(); ++i) out.i64[i] = float_to_integer(to, x.f32[i]);
  } else {
    for (size_t i = 0; i < x.i64.size(); ++i) out.i64[i] = wrap_integer(to, x.i64[i]);
  }
  return out;
}

Tensor slice(const Tensor& x, const SliceAttrs& a, const Shape& out_shape) {
  const auto& [starts, ends, axes, steps] = a;
  const auto in_strides = strides_of(x.shape);
  std::vector<int64_t> step_strides = in_strides;
  int64_t base = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const SliceRange r = normalize_slice(x.shape[axes[i]], starts[i], ends[i], steps[i]);
    base += r.start * in_strides[axes[i]];
    step_strides[axes[i]] = in_strides[axes[i]] * r.step;
  }
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  const std::vector<int64_t> none(out_shape.size(), 0);
  for_each_broadcast(out_shape, step_strides, none, [&](int64_t i, int64_t src, int64_t) {
    if (x.dtype == DType::kFloat32)
      out.f32[i] = x.f32[base + src];
    else
      out.i64[i] = x.i64[base + src];
  });
  return out;
}

Expected<Tensor> gather(const Tensor& x, const Tensor& indices, int64_t axis,
                        const Shape& out_shape) {
  const int64_t dim = x.shape[axis];
  const int64_t outer = num_elements(Shape(x.shape.begin(), x.shape.begin() + axis));
  const int64_t inner = num_elements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  const int64_t count = indices.size();
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  for (int64_t j = 0; j < count; ++j) {
    int64_t k = indices.i64[j];
    if (k < -dim || k >= dim)
      return invalid_argument("gather index " + std::to_string(k) + " out of range for axis of " +
                              std::to_string(dim));
    if (k < 0) k += dim;
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t src = (o * dim + k) * inner, dst = (o * count + j) * inner;
      if (x.dtype == DType::kFloat32)
        std::copy_n(x.f32.begin() + src, inner, out.f32.begin() + dst);
      else
        std::copy_n(x.i64.begin() + src, inner, out.i64.begin() + dst);
    }
  }
  return out;
}

}  // namespace tensortune::graph::kernels
