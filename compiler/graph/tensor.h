#pragma once
/// \file
/// Tensors of the graph IR: a dtype and a shape (`TensorType`), and a value of that type
/// (`Tensor`). Two dtypes cover what our models carry: float32 activations and weights, and
/// int64 shape arithmetic and indices.
#include <cstdint>
#include <string>
#include <vector>

#include "support/ndarray.h"

namespace tensortune::graph {

enum class DType { kFloat32, kInt64 };

/// "float32", "int64".
const char* dtype_name(DType dtype);

using Shape = std::vector<int64_t>;

int64_t num_elements(const Shape& shape);

struct TensorType {
  DType dtype = DType::kFloat32;
  Shape shape;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

/// "float32[1,3,224,224]".
std::string type_string(const TensorType& type);

/// A dense row-major value. Exactly one of `f32` / `i64` holds the elements, chosen by dtype.
struct Tensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::vector<float> f32;
  std::vector<int64_t> i64;

  static Tensor zeros(DType dtype, Shape shape);
  static Tensor from_floats(Shape shape, std::vector<float> values);
  static Tensor from_ints(Shape shape, std::vector<int64_t> values);
  static Tensor from_ndarray(NdArray array);

  TensorType type() const { return {dtype, shape}; }
  int64_t size() const { return num_elements(shape); }
  /// Element i as a double, whatever the dtype (for printing and shape arithmetic).
  double at(int64_t i) const { return dtype == DType::kFloat32 ? f32[i] : double(i64[i]); }
  NdArray to_ndarray() const;
};

/// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& shape);

/// Numpy broadcasting of two shapes; false when they are incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out);

}  // namespace tensortune::graph
