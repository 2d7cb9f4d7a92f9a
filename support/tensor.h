#pragma once
/// \file
/// The one tensor type: a dtype, a shape and the elements, dense and row-major (numpy's C
/// order, last axis fastest). Tuning's operator inputs and outputs, `.npy` files, the graph
/// IR's constants and the runtime's inputs and outputs are all `Tensor`s (the graph names them
/// `graph::Tensor`, the same type). float32 carries activations and weights; the integer dtypes
/// and bool carry shape arithmetic, indices, masks and quantised storage. Every integer dtype
/// is stored widened in `i64` (values kept inside the dtype's range, wrap_integer), so code that
/// moves elements needs to know only float or integer.
#include <cstdint>
#include <string>
#include <vector>

namespace tensortune {

/// Values are stored in artifacts: append, never renumber.
enum class DType { kFloat32, kInt64, kInt32, kBool, kInt8, kUInt8 };

/// "float32", "int64", "int32", "bool", "int8", "uint8".
const char* dtype_name(DType dtype);
/// The dtype of a name dtype_name gives; false for any other text.
bool dtype_from_name(const std::string& name, DType* dtype);
/// float32: elements in `f32`; every other dtype: in `i64`.
inline bool is_float(DType dtype) { return dtype == DType::kFloat32; }
/// `v` as the dtype holds it: two's-complement wrap for int32/int8/uint8 (numpy's astype and
/// ONNX's Cast between integers), 0/1 for bool; int64 and float32 unchanged.
int64_t wrap_integer(DType dtype, int64_t v);
/// A float converted to an integer dtype as ONNX's Cast does: truncated toward zero, then
/// wrapped (values beyond int64 saturate first; NaN gives 0); bool: nonzero is 1.
int64_t float_to_integer(DType dtype, double v);

using Shape = std::vector<int64_t>;

/// The product of the dimensions; saturates at INT64_MAX rather than overflow (shapes from
/// outside input are checked with checked_num_elements first).
int64_t num_elements(const Shape& shape);
/// The largest element count a tensor from outside input (a file, a model) may claim: 2^40,
/// far beyond any memory, so that byte counts derived from it cannot overflow.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
/// The element count, or -1 when a dimension is negative or the count exceeds
/// kMaxTensorElements.
int64_t checked_num_elements(const Shape& shape);

/// "1x64x56x56".
std::string shape_to_string(const Shape& shape);

struct TensorType {
  DType dtype = DType::kFloat32;
  Shape shape;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

/// "float32[1,3,224,224]".
std::string type_string(const TensorType& type);

/// Exactly one of `f32` / `i64` holds the elements, chosen by is_float(dtype).
struct Tensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::vector<float> f32;
  std::vector<int64_t> i64;

  /// float32 zeros.
  static Tensor zeros(Shape shape) { return zeros(DType::kFloat32, std::move(shape)); }
  static Tensor zeros(DType dtype, Shape shape);
  static Tensor from_floats(Shape shape, std::vector<float> values);
  /// int64 (or another integer dtype: the values must already be in its range).
  static Tensor from_ints(Shape shape, std::vector<int64_t> values, DType dtype = DType::kInt64);

  TensorType type() const { return {dtype, shape}; }
  int64_t size() const { return num_elements(shape); }
  /// Element i as a double, whatever the dtype (for printing and shape arithmetic).
  double at(int64_t i) const { return is_float(dtype) ? f32[i] : double(i64[i]); }
};

/// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& shape);

/// Numpy broadcasting of two shapes; false when they are incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out);

/// Fills a float32 tensor with uniform values in [lo, hi) from a fixed-seed generator
/// (deterministic across runs and machines).
void fill_uniform(Tensor& tensor, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace tensortune
