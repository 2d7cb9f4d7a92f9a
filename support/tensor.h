#pragma once
/// \file
/// The one tensor type: a dtype, a shape and the elements, dense and row-major (numpy's C
/// order, last axis fastest). Tuning's operator inputs and outputs, `.npy` files, the graph
/// IR's constants and the runtime's inputs and outputs are all `Tensor`s (the graph names them
/// `graph::Tensor`, the same type). float32 carries activations and weights; the integer dtypes
/// and bool carry shape arithmetic, indices, masks and quantised storage. Every integer dtype
/// is stored widened in `i64` (values kept inside the dtype's range, wrap_integer), and every
/// float dtype in `f32` (float16 and bfloat16 values are exactly float32s; float64 values are
/// rounded to float32: we store and exchange float64 but compute in float32), so code that
/// moves elements needs to know only float or integer.
#include <cstdint>
#include <string>
#include <vector>

namespace tensortune {

/// Values are stored in artifacts: append, never renumber.
enum class DType {
  kFloat32,
  kInt64,
  kInt32,
  kBool,
  kInt8,
  kUInt8,
  kFloat16,
  kFloat64,
  kBFloat16,
  kInt16,
  kUInt16,
  kUInt32,
  kUInt64,
};
/// Every dtype, in enum order.
inline constexpr DType kAllDTypes[] = {
    DType::kFloat32, DType::kInt64,   DType::kInt32,   DType::kBool,     DType::kInt8,
    DType::kUInt8,   DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt16,
    DType::kUInt16,  DType::kUInt32,  DType::kUInt64};

/// "float32", "int64", "int32", "bool", "int8", "uint8", "float16", "float64", "bfloat16",
/// "int16", "uint16", "uint32", "uint64" (numpy's names).
const char* dtype_name(DType dtype);
/// The dtype of a name dtype_name gives; false for any other text.
bool dtype_from_name(const std::string& name, DType* dtype);
/// Float dtypes keep their elements in `f32`; every other dtype in `i64`.
inline bool is_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kFloat64 ||
         dtype == DType::kBFloat16;
}
/// The dtype arithmetic on values of `dtype` happens in: float32 for every float dtype
/// (float16 and bfloat16 are storage formats; float64 is held in float32), else `dtype`.
inline DType compute_dtype(DType dtype) { return is_float(dtype) ? DType::kFloat32 : dtype; }
/// int8, int16, int32, int64 (bool and the unsigned dtypes are not).
inline bool is_signed_integer(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kInt16 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}
/// Bytes per element in a file or on the wire (2 for float16, 8 for float64, ...).
int element_size(DType dtype);
/// Bytes per element in a kernel's buffer (compiled networks, measurements): 4 for every float
/// dtype (held in float32), the integer dtype's own width otherwise (uint8 one byte, int32 four).
inline int buffer_element_size(DType dtype) { return is_float(dtype) ? 4 : element_size(dtype); }
/// A float dtype's element from its little-endian bytes (element_size of them), as float32.
float float_from_bytes(DType dtype, const char* bytes);
/// Writes `v` as a float dtype's element_size little-endian bytes (rounded onto the dtype).
void float_to_bytes(DType dtype, float v, char* bytes);
/// `v` as the dtype holds it: two's-complement wrap for the narrow integers (numpy's astype and
/// ONNX's Cast between integers), 0/1 for bool; int64, uint64 and the floats unchanged.
/// uint64 is held as its bit pattern in int64: values from 2^63 on are refused where tensors
/// are read from a file or a model.
int64_t wrap_integer(DType dtype, int64_t v);
/// `v` rounded onto a float dtype's grid (float16, bfloat16; float32 and float64 unchanged).
float round_float(DType dtype, float v);
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
  /// Rounds every element onto its float dtype's grid (float16, bfloat16); no-op otherwise.
  void round_to_dtype();
  /// Element i as a double, whatever the dtype (for printing and shape arithmetic).
  double at(int64_t i) const { return is_float(dtype) ? f32[i] : double(i64[i]); }
};

/// The tensor's elements into `dst`, buffer_element_size(dtype) bytes each (little-endian).
void write_buffer(const Tensor& t, void* dst);
/// A tensor of `type` from a buffer that write_buffer's layout fills.
Tensor read_buffer(const TensorType& type, const void* src);
/// A tensor of `type` from its own storage form: float32 values for float dtypes, int64 for
/// integers (what Tensor::f32 and Tensor::i64 hold).
Tensor tensor_from_storage(const TensorType& type, const void* storage);

/// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& shape);

/// Numpy broadcasting of two shapes; false when they are incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out);

/// Fills a float32 tensor with uniform values in [lo, hi) from a fixed-seed generator
/// (deterministic across runs and machines).
void fill_uniform(Tensor& tensor, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace tensortune
