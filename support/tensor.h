#pragma once
/// \file
/// The one tensor type: a dtype, a shape and the elements, dense and row-major (numpy's C
/// order, last axis fastest). Tuning's operator inputs and outputs, `.npy` files, the graph
/// IR's constants and the runtime's inputs and outputs are all `Tensor`s (the graph names them
/// `graph::Tensor`, the same type). Two dtypes cover what our models carry: float32 activations
/// and weights, int64 shape arithmetic and indices.
#include <cstdint>
#include <string>
#include <vector>

namespace tensortune {

enum class DType { kFloat32, kInt64 };

/// "float32", "int64".
const char* dtype_name(DType dtype);

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

/// Exactly one of `f32` / `i64` holds the elements, chosen by dtype.
struct Tensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::vector<float> f32;
  std::vector<int64_t> i64;

  /// float32 zeros.
  static Tensor zeros(Shape shape) { return zeros(DType::kFloat32, std::move(shape)); }
  static Tensor zeros(DType dtype, Shape shape);
  static Tensor from_floats(Shape shape, std::vector<float> values);
  static Tensor from_ints(Shape shape, std::vector<int64_t> values);

  TensorType type() const { return {dtype, shape}; }
  int64_t size() const { return num_elements(shape); }
  /// Element i as a double, whatever the dtype (for printing and shape arithmetic).
  double at(int64_t i) const { return dtype == DType::kFloat32 ? f32[i] : double(i64[i]); }
};

/// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& shape);

/// Numpy broadcasting of two shapes; false when they are incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out);

/// Fills a float32 tensor with uniform values in [lo, hi) from a fixed-seed generator
/// (deterministic across runs and machines).
void fill_uniform(Tensor& tensor, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace tensortune
