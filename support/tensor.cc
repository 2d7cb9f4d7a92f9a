#include "support/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "support/error.h"
#include "support/float16.h"

namespace tensortune {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kInt64:
      return "int64";
    case DType::kInt32:
      return "int32";
    case DType::kBool:
      return "bool";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat64:
      return "float64";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt16:
      return "int16";
    case DType::kUInt16:
      return "uint16";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
  }
  return "?";
}

int element_size(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUInt16:
      return 2;
    case DType::kFloat32:
    case DType::kInt32:
    case DType::kUInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
    case DType::kUInt64:
      return 8;
  }
  return 8;
}

bool dtype_from_name(const std::string& name, DType* dtype) {
  for (DType d : kAllDTypes)
    if (name == dtype_name(d)) {
      *dtype = d;
      return true;
    }
  return false;
}

int64_t wrap_integer(DType dtype, int64_t v) {
  switch (dtype) {
    case DType::kInt32:
      return static_cast<int32_t>(static_cast<uint32_t>(v));
    case DType::kInt8:
      return static_cast<int8_t>(static_cast<uint8_t>(v));
    case DType::kUInt8:
      return static_cast<uint8_t>(v);
    case DType::kInt16:
      return static_cast<int16_t>(static_cast<uint16_t>(v));
    case DType::kUInt16:
      return static_cast<uint16_t>(v);
    case DType::kUInt32:
      return static_cast<uint32_t>(v);
    case DType::kBool:
      return v != 0;
    default:
      return v;
  }
}

float round_float(DType dtype, float v) {
  switch (dtype) {
    case DType::kFloat16:
      return round_to_half(v);
    case DType::kBFloat16:
      return round_to_bfloat16(v);
    default:
      return v;
  }
}

float float_from_bytes(DType dtype, const char* bytes) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16: {
      uint16_t h;
      std::memcpy(&h, bytes, 2);
      return dtype == DType::kFloat16 ? half_bits_to_float(h) : bfloat16_bits_to_float(h);
    }
    case DType::kFloat64: {
      double d;
      std::memcpy(&d, bytes, 8);
      return static_cast<float>(d);
    }
    default: {
      float f;
      std::memcpy(&f, bytes, 4);
      return f;
    }
  }
}

void float_to_bytes(DType dtype, float v, char* bytes) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16: {
      const uint16_t h =
          dtype == DType::kFloat16 ? float_to_half_bits(v) : float_to_bfloat16_bits(v);
      std::memcpy(bytes, &h, 2);
      return;
    }
    case DType::kFloat64: {
      const double d = v;
      std::memcpy(bytes, &d, 8);
      return;
    }
    default:
      std::memcpy(bytes, &v, 4);
  }
}

void Tensor::round_to_dtype() {
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16) return;
  for (float& v : f32) v = round_float(dtype, v);
}

int64_t float_to_integer(DType dtype, double v) {
  if (dtype == DType::kBool) return v != 0;
  if (std::isnan(v)) return 0;
  // Saturate to int64's range before converting: out-of-range float->int is undefined in C++.
  constexpr double kLimit = 9223372036854775807.0;
  int64_t i = v >= kLimit    ? std::numeric_limits<int64_t>::max()
              : v <= -kLimit ? std::numeric_limits<int64_t>::min()
                             : static_cast<int64_t>(v);
  return wrap_integer(dtype, i);
}

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

int64_t checked_num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxTensorElements) return -1;
  return n;
}

std::string type_string(const TensorType& type) {
  std::string s = std::string(dtype_name(type.dtype)) + "[";
  for (size_t i = 0; i < type.shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(type.shape[i]);
  }
  return s + "]";
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (is_float(dtype))
    t.f32.assign(num_elements(t.shape), 0.0f);
  else
    t.i64.assign(num_elements(t.shape), 0);
  return t;
}

Tensor Tensor::from_floats(Shape shape, std::vector<float> values) {
  TT_CHECK(num_elements(shape) == static_cast<int64_t>(values.size()));
  Tensor t;
  t.shape = std::move(shape);
  t.f32 = std::move(values);
  return t;
}

Tensor Tensor::from_ints(Shape shape, std::vector<int64_t> values, DType dtype) {
  TT_CHECK(num_elements(shape) == static_cast<int64_t>(values.size()));
  TT_CHECK(!is_float(dtype));
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.i64 = std::move(values);
  return t;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  Shape r(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    r[i] = da == 1 ? db : da;
  }
  *out = std::move(r);
  return true;
}

std::string shape_to_string(const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += "x";
    s += std::to_string(shape[i]);
  }
  return s;
}

void fill_uniform(Tensor& tensor, uint64_t seed, float lo, float hi) {
  // mt19937_64 output is specified by the standard, so the values are the same everywhere;
  // the distribution is our own arithmetic for the same reason.
  std::mt19937_64 gen(seed);
  const double scale = (static_cast<double>(hi) - lo) / 18446744073709551616.0;
  for (float& v : tensor.f32) v = static_cast<float>(lo + static_cast<double>(gen()) * scale);
}

void write_buffer(const Tensor& t, void* dst) {
  if (is_float(t.dtype)) {
    if (!t.f32.empty()) std::memcpy(dst, t.f32.data(), t.f32.size() * sizeof(float));
    return;
  }
  const int width = element_size(t.dtype);
  auto* bytes = static_cast<char*>(dst);
  if (width == 8) {
    if (!t.i64.empty()) std::memcpy(dst, t.i64.data(), t.i64.size() * sizeof(int64_t));
    return;
  }
  for (size_t i = 0; i < t.i64.size(); ++i) {
    const int64_t v = t.i64[i];
    std::memcpy(bytes + i * width, &v, static_cast<size_t>(width));  // little-endian
  }
}

Tensor read_buffer(const TensorType& type, const void* src) {
  Tensor t = Tensor::zeros(type.dtype, type.shape);
  if (is_float(type.dtype)) {
    if (!t.f32.empty()) std::memcpy(t.f32.data(), src, t.f32.size() * sizeof(float));
    return t;
  }
  const int width = element_size(type.dtype);
  const auto* bytes = static_cast<const char*>(src);
  for (size_t i = 0; i < t.i64.size(); ++i) {
    int64_t v = 0;
    std::memcpy(&v, bytes + i * width, static_cast<size_t>(width));
    t.i64[i] = wrap_integer(type.dtype, v);  // sign-extends the narrow signed dtypes
  }
  return t;
}

Tensor tensor_from_storage(const TensorType& type, const void* storage) {
  Tensor t = Tensor::zeros(type.dtype, type.shape);
  if (is_float(type.dtype)) {
    if (!t.f32.empty()) std::memcpy(t.f32.data(), storage, t.f32.size() * sizeof(float));
  } else if (!t.i64.empty()) {
    std::memcpy(t.i64.data(), storage, t.i64.size() * sizeof(int64_t));
  }
  return t;
}

}  // namespace tensortune
