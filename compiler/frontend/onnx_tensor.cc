#include <cstring>
#include <fstream>
#include <sstream>

#include "compiler/frontend/onnx_io.h"
#include "compiler/frontend/onnx_proto.h"

namespace tensortune::frontend {

std::string onnx_dtype_name(int32_t elem_type) {
  if (onnx::TensorProto_DataType_IsValid(elem_type))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
  return "dtype " + std::to_string(elem_type);
}

namespace {

// ONNX's element types beside ours (TensorProto.DataType).
struct DTypePair {
  int32_t onnx;
  graph::DType dtype;
};
constexpr DTypePair kDTypes[] = {
    {onnx::TensorProto_DataType_FLOAT, graph::DType::kFloat32},
    {onnx::TensorProto_DataType_INT64, graph::DType::kInt64},
    {onnx::TensorProto_DataType_INT32, graph::DType::kInt32},
    {onnx::TensorProto_DataType_BOOL, graph::DType::kBool},
    {onnx::TensorProto_DataType_INT8, graph::DType::kInt8},
    {onnx::TensorProto_DataType_UINT8, graph::DType::kUInt8},
    {onnx::TensorProto_DataType_FLOAT16, graph::DType::kFloat16},
    {onnx::TensorProto_DataType_DOUBLE, graph::DType::kFloat64},
    {onnx::TensorProto_DataType_BFLOAT16, graph::DType::kBFloat16},
    {onnx::TensorProto_DataType_INT16, graph::DType::kInt16},
    {onnx::TensorProto_DataType_UINT16, graph::DType::kUInt16},
    {onnx::TensorProto_DataType_UINT32, graph::DType::kUInt32},
    {onnx::TensorProto_DataType_UINT64, graph::DType::kUInt64},
};

}  // namespace

std::optional<graph::DType> dtype_from_onnx(int32_t elem_type) {
  for (const auto& p : kDTypes)
    if (p.onnx == elem_type) return p.dtype;
  return std::nullopt;
}

int32_t dtype_to_onnx(graph::DType dtype) {
  for (const auto& p : kDTypes)
    if (p.dtype == dtype) return p.onnx;
  return onnx::TensorProto_DataType_UNDEFINED;
}

const char* kSupportedOnnxDTypes =
    "FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64, "
    "BOOL";

Expected<graph::Tensor> tensor_from_proto(const onnx::TensorProto& p) {
  graph::Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      return invalid_argument("tensor '" + p.name() + "' has a negative dimension " +
                              std::to_string(d));
  const int64_t count = checked_num_elements(shape);
  if (count < 0)
    return invalid_argument("tensor '" + p.name() + "' has shape [" + shape_to_string(shape) +
                            "]: more than 2^40 elements");
  if (p.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    return unimplemented("tensor '" + p.name() + "' stores its data externally");
  auto dtype = dtype_from_onnx(p.data_type());
  if (!dtype)
    return unimplemented("tensor '" + p.name() + "' has dtype " + onnx_dtype_name(p.data_type()) +
                         " (supported: " + kSupportedOnnxDTypes + ")");
  graph::Tensor t;
  t.shape = shape;
  t.dtype = *dtype;
  const bool is_float = graph::is_float(t.dtype);
  const int64_t held =
      p.has_raw_data() ? static_cast<int64_t>(p.raw_data().size()) / graph::element_size(t.dtype)
      : t.dtype == graph::DType::kFloat32                                    ? p.float_data_size()
      : t.dtype == graph::DType::kFloat64                                    ? p.double_data_size()
      : t.dtype == graph::DType::kInt64                                      ? p.int64_data_size()
      : t.dtype == graph::DType::kUInt32 || t.dtype == graph::DType::kUInt64 ? p.uint64_data_size()
                                                                             : p.int32_data_size();
  if (p.has_raw_data() &&
      static_cast<int64_t>(p.raw_data().size()) != count * graph::element_size(t.dtype))
    return invalid_argument("tensor '" + p.name() + "' raw_data has " +
                            std::to_string(p.raw_data().size()) + " bytes, expected " +
                            std::to_string(count * graph::element_size(t.dtype)));
  if (held != count)
    return invalid_argument("tensor '" + p.name() + "' holds " + std::to_string(held) +
                            " values for shape [" + shape_to_string(shape) + "]");
  if (is_float)
    t.f32.resize(count);
  else
    t.i64.resize(count);
  const std::string& raw = p.raw_data();
  const int size = graph::element_size(t.dtype);
  for (int64_t i = 0; i < count; ++i) {
    if (p.has_raw_data()) {
      const char* bytes = raw.data() + i * size;
      if (is_float) {
        t.f32[i] = graph::float_from_bytes(t.dtype, bytes);
        continue;
      }
      // The low bytes of a little-endian int64, sign-extended for the signed dtypes.
      uint64_t bits = 0;
      std::memcpy(&bits, bytes, size);
      int64_t v = static_cast<int64_t>(bits);
      if (size < 8 && graph::is_signed_integer(t.dtype)) {
        const int shift = 64 - 8 * size;
        v = static_cast<int64_t>(bits << shift) >> shift;
      }
      t.i64[i] = v;
    } else if (t.dtype == graph::DType::kFloat32) {
      t.f32[i] = p.float_data(static_cast<int>(i));
    } else if (t.dtype == graph::DType::kFloat64) {
      t.f32[i] = static_cast<float>(p.double_data(static_cast<int>(i)));
    } else if (is_float) {  // float16 and bfloat16: their bits in int32_data
      char bytes[2];
      const auto bits = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
      std::memcpy(bytes, &bits, 2);
      t.f32[i] = graph::float_from_bytes(t.dtype, bytes);
    } else if (t.dtype == graph::DType::kInt64) {
      t.i64[i] = p.int64_data(static_cast<int>(i));
    } else if (t.dtype == graph::DType::kUInt32 || t.dtype == graph::DType::kUInt64) {
      t.i64[i] = static_cast<int64_t>(p.uint64_data(static_cast<int>(i)));
    } else {
      t.i64[i] = p.int32_data(static_cast<int>(i));
    }
  }
  for (int64_t& v : t.i64) {
    if (t.dtype == graph::DType::kUInt64 && v < 0)
      return invalid_argument("tensor '" + p.name() + "' holds the uint64 value " +
                              std::to_string(static_cast<uint64_t>(v)) +
                              ": values from 2^63 on are not supported (held in int64)");
    v = graph::wrap_integer(t.dtype, v);
  }
  return t;
}

void tensor_to_proto(const graph::Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->set_name(name);
  for (int64_t d : t.shape) p->add_dims(d);
  p->set_data_type(dtype_to_onnx(t.dtype));
  const int size = graph::element_size(t.dtype);
  std::string raw(static_cast<size_t>(t.size()) * size, '\0');
  for (int64_t i = 0; i < t.size(); ++i) {
    if (graph::is_float(t.dtype))
      graph::float_to_bytes(t.dtype, t.f32[i], raw.data() + i * size);
    else
      std::memcpy(raw.data() + i * size, &t.i64[i], size);  // little-endian: low bytes first
  }
  p->set_raw_data(std::move(raw));
}

Expected<graph::Tensor> read_onnx_tensor(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open tensor file " + path);
  onnx::TensorProto proto;
  if (!proto.ParseFromIstream(&in))
    return invalid_argument(path + " is not a serialized onnx TensorProto");
  auto t = tensor_from_proto(proto);
  if (!t) return t.error().with_context(path);
  return t;
}

}  // namespace tensortune::frontend
