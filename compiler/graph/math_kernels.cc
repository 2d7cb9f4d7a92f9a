// Interpreter loops for element-wise math, comparisons, logic and where (ONNX's semantics:
// Round is half to even, comparisons give bool, integer results wrap to their dtype).
#include <cmath>

#include "compiler/graph/kernels.h"

namespace tensortune::graph::kernels {

std::vector<int64_t> broadcast_source_index(const Shape& in, const Shape& out_shape) {
  const int64_t total = num_elements(out_shape);
  std::vector<int64_t> map(static_cast<size_t>(total));
  const auto in_strides = strides_of(in);
  const size_t rank = out_shape.size(), lead = rank - in.size();
  std::vector<int64_t> stride(rank, 0);
  for (size_t i = 0; i < in.size(); ++i) stride[lead + i] = in[i] == 1 ? 0 : in_strides[i];
  std::vector<int64_t> idx(rank, 0);
  int64_t src = 0;
  for (int64_t i = 0; i < total; ++i) {
    map[static_cast<size_t>(i)] = src;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      ++idx[d];
      src += stride[d];
      if (idx[d] < out_shape[d]) break;
      src -= stride[d] * idx[d];
      idx[d] = 0;
    }
  }
  return map;
}

namespace {

float unary_float(MathOp op, float v, const Attrs& a) {
  const double x = v;
  switch (op) {
    case MathOp::kExp:
      return static_cast<float>(std::exp(x));
    case MathOp::kLog:
      return static_cast<float>(std::log(x));
    case MathOp::kSqrt:
      return static_cast<float>(std::sqrt(x));
    case MathOp::kErf:
      return static_cast<float>(std::erf(x));
    case MathOp::kTanh:
      return static_cast<float>(std::tanh(x));
    case MathOp::kFloor:
      return std::floor(v);
    case MathOp::kCeil:
      return std::ceil(v);
    case MathOp::kRound:
      return std::nearbyint(v);  // the default rounding mode: half to even, as ONNX's Round
    case MathOp::kReciprocal:
      return static_cast<float>(1.0 / x);
    case MathOp::kSoftplus:
      return static_cast<float>(x > 30 ? x : std::log1p(std::exp(x)));
    case MathOp::kMish:
      return static_cast<float>(x * std::tanh(x > 30 ? x : std::log1p(std::exp(x))));
    case MathOp::kLeakyRelu:
      return v < 0 ? static_cast<float>(attrs_as<LeakyReluAttrs>(a).alpha * x) : v;
    case MathOp::kElu:
      return v < 0 ? static_cast<float>(attrs_as<EluAttrs>(a).alpha * std::expm1(x)) : v;
    case MathOp::kSelu: {
      const auto s = attrs_as<SeluAttrs>(a);
      return static_cast<float>(s.gamma * (x <= 0 ? s.alpha * std::expm1(x) : x));
    }
    case MathOp::kGelu:
      if (attrs_as<GeluAttrs>(a).tanh) {
        const double k = std::sqrt(2.0 / M_PI);
        return static_cast<float>(0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x))));
      }
      return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
    case MathOp::kNeg:
      return -v;
    case MathOp::kAbs:
      return std::fabs(v);
    case MathOp::kNot:
      break;
  }
  unsupported_operands("unary_math", static_cast<int>(op), "Not takes bool operands only");
}

// Every MathBinaryOp but Pow, whose exponent may have another dtype than its base (its own
// loop in binary_math). Comparisons and logic give 0 or 1 (their results are bool).
template <typename T>
T binary_value(MathBinaryOp op, T x, T y) {
  switch (op) {
    case MathBinaryOp::kMaximum:
      return (x != x || x > y) ? x : y;  // a NaN operand wins, as in ONNX's Max
    case MathBinaryOp::kMinimum:
      return (x != x || x < y) ? x : y;
    case MathBinaryOp::kPRelu:
      return x < 0 ? x * y : x;
    case MathBinaryOp::kEqual:
      return x == y;
    case MathBinaryOp::kLess:
      return x < y;
    case MathBinaryOp::kLessOrEqual:
      return x <= y;
    case MathBinaryOp::kGreater:
      return x > y;
    case MathBinaryOp::kGreaterOrEqual:
      return x >= y;
    case MathBinaryOp::kAnd:
      return x && y;
    case MathBinaryOp::kOr:
      return x || y;
    case MathBinaryOp::kXor:
      return (x != 0) != (y != 0);
    case MathBinaryOp::kPow:
      break;
  }
  unsupported_operands("binary_math", static_cast<int>(op), "Pow has a loop of its own");
}

int64_t integer_pow(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? (exp % 2 ? -1 : 1) : 0);
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (; exp > 0; exp >>= 1, b *= b)
    if (exp & 1) result *= b;
  return static_cast<int64_t>(result);
}

}  // namespace

Tensor unary_math(MathOp op, const Tensor& x, const Attrs& attrs) {
  Tensor out = x;
  if (is_float(x.dtype)) {
    for (float& v : out.f32) v = unary_float(op, v, attrs);
    return out;
  }
  for (int64_t& v : out.i64) {
    switch (op) {
      case MathOp::kNot:
        v = v ? 0 : 1;
        break;
      case MathOp::kNeg:
        v = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
        break;
      case MathOp::kAbs:
        if (v < 0) v = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
        break;
      case MathOp::kExp:
      case MathOp::kLog:
      case MathOp::kSqrt:
      case MathOp::kErf:
      case MathOp::kTanh:
      case MathOp::kFloor:
      case MathOp::kCeil:
      case MathOp::kRound:
      case MathOp::kReciprocal:
      case MathOp::kSoftplus:
      case MathOp::kMish:
      case MathOp::kLeakyRelu:
      case MathOp::kElu:
      case MathOp::kSelu:
      case MathOp::kGelu:
        unsupported_operands("unary_math", static_cast<int>(op),
                             "shape inference gives it float operands only");
    }
    v = wrap_integer(out.dtype, v);
  }
  return out;
}

Tensor binary_math(MathBinaryOp op, const Tensor& a, const Tensor& b, const TensorType& out_type) {
  Tensor out = Tensor::zeros(out_type.dtype, out_type.shape);
  const auto ia = broadcast_source_index(a.shape, out_type.shape);
  const auto ib = broadcast_source_index(b.shape, out_type.shape);
  const size_t n = ia.size();
  const bool floats = is_float(a.dtype);
  if (op == MathBinaryOp::kPow) {
    for (size_t i = 0; i < n; ++i) {
      const double y = b.at(ib[i]);
      if (floats)
        out.f32[i] = static_cast<float>(std::pow(double(a.f32[ia[i]]), y));
      else if (is_float(b.dtype))
        out.i64[i] = float_to_integer(a.dtype, std::pow(double(a.i64[ia[i]]), y));
      else
        out.i64[i] = wrap_integer(a.dtype, integer_pow(a.i64[ia[i]], b.i64[ib[i]]));
    }
    return out;
  }
  // Max, min and prelu keep their operands' dtype; comparisons and logic give bool.
  const bool float_result = is_float(out_type.dtype);
  for (size_t i = 0; i < n; ++i) {
    if (floats) {
      const float r = binary_value(op, a.f32[ia[i]], b.f32[ib[i]]);
      if (float_result)
        out.f32[i] = r;
      else
        out.i64[i] = r != 0;
    } else {
      out.i64[i] = wrap_integer(out.dtype, binary_value(op, a.i64[ia[i]], b.i64[ib[i]]));
    }
  }
  return out;
}

Tensor mod(const Tensor& a, const Tensor& b, bool fmod, const TensorType& out_type) {
  Tensor out = Tensor::zeros(out_type.dtype, out_type.shape);
  const auto ia = broadcast_source_index(a.shape, out_type.shape);
  const auto ib = broadcast_source_index(b.shape, out_type.shape);
  for (size_t i = 0; i < ia.size(); ++i) {
    if (is_float(a.dtype)) {
      const double x = a.f32[ia[i]], y = b.f32[ib[i]];
      double r = std::fmod(x, y);
      if (!fmod && r != 0 && (r < 0) != (y < 0)) r += y;
      out.f32[i] = static_cast<float>(r);
      continue;
    }
    const int64_t x = a.i64[ia[i]], y = b.i64[ib[i]];
    if (y == 0 || (y == -1)) {  // x % -1 is 0; INT64_MIN % -1 overflows in C++
      out.i64[i] = 0;
      continue;
    }
    int64_t r = x % y;
    if (!fmod && r != 0 && (r < 0) != (y < 0)) r += y;
    out.i64[i] = wrap_integer(out.dtype, r);
  }
  return out;
}

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y, const Shape& out_shape) {
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  const auto ic = broadcast_source_index(cond.shape, out_shape);
  const auto ix = broadcast_source_index(x.shape, out_shape);
  const auto iy = broadcast_source_index(y.shape, out_shape);
  for (size_t i = 0; i < ic.size(); ++i) {
    const bool take_x = cond.i64[ic[i]] != 0;
    if (is_float(x.dtype))
      out.f32[i] = take_x ? x.f32[ix[i]] : y.f32[iy[i]];
    else
      out.i64[i] = take_x ? x.i64[ix[i]] : y.i64[iy[i]];
  }
  return out;
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
  const int64_t len = x.shape[axis];
  const int64_t inner = num_elements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  const int64_t outer = x.size() / std::max<int64_t>(len * inner, 1);
  Tensor out = x;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * len * inner + in;
      double max = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k) max = std::max(max, double(x.f32[base + k * inner]));
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x.f32[base + k * inner] - max);
      const double log_sum = std::log(sum) + max;
      for (int64_t k = 0; k < len; ++k)
        out.f32[base + k * inner] = static_cast<float>(x.f32[base + k * inner] - log_sum);
    }
  return out;
}

Tensor conv2d_transpose(const Tensor& x, const Tensor& w, const Conv2dTransposeAttrs& a,
                        const Shape& out_shape) {
  const int64_t N = x.shape[0], C = x.shape[1], OCG = w.shape[1], OC = out_shape[1];
  const size_t d = x.shape.size() - 2;
  const Shape in_sp(x.shape.begin() + 2, x.shape.end()), k_sp(w.shape.begin() + 2, w.shape.end());
  const Shape out_sp(out_shape.begin() + 2, out_shape.end());
  const int64_t IS = num_elements(in_sp), KS = num_elements(k_sp), OS = num_elements(out_sp);
  const auto in_strides = strides_of(in_sp), k_strides = strides_of(k_sp);
  const auto out_strides = strides_of(out_sp);
  const int64_t CG = C / a.groups;
  Tensor out = Tensor::zeros(DType::kFloat32, out_shape);
  // For each input position and kernel tap: the output position it lands on, or -1.
  std::vector<int64_t> target(static_cast<size_t>(IS * KS));
  for (int64_t i = 0; i < IS; ++i)
    for (int64_t k = 0; k < KS; ++k) {
      int64_t o = 0;
      for (size_t j = 0; j < d && o >= 0; ++j) {
        const int64_t ic = i / in_strides[j] % in_sp[j], kc = k / k_strides[j] % k_sp[j];
        const int64_t oc = ic * a.strides[j] + kc * a.dilations[j] - a.pads[j];
        o = oc < 0 || oc >= out_sp[j] ? -1 : o + oc * out_strides[j];
      }
      target[i * KS + k] = o;
    }
  // Every input element scatters into the outputs its kernel window covers.
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t g = c / CG;
      for (int64_t i = 0; i < IS; ++i) {
        const float v = x.f32[(n * C + c) * IS + i];
        for (int64_t ocg = 0; ocg < OCG; ++ocg) {
          const int64_t oc = g * OCG + ocg;
          float* o = &out.f32[(n * OC + oc) * OS];
          const float* wk = &w.f32[(c * OCG + ocg) * KS];
          for (int64_t k = 0; k < KS; ++k)
            if (const int64_t t = target[i * KS + k]; t >= 0) o[t] += v * wk[k];
        }
      }
    }
  return out;
}

}  // namespace tensortune::graph::kernels
