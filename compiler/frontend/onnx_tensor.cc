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

std::optional<graph::DType> dtype_from_onnx(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto_DataType_FLOAT:
      return graph::DType::kFloat32;
    case onnx::TensorProto_DataType_INT64:
      return graph::DType::kInt64;
    case onnx::TensorProto_DataType_INT32:
      return graph::DType::kInt32;
    case onnx::TensorProto_DataType_BOOL:
      return graph::DType::kBool;
    case onnx::TensorProto_DataType_INT8:
      return graph::DType::kInt8;
    case onnx::TensorProto_DataType_UINT8:
      return graph::DType::kUInt8;
    default:
      return std::nullopt;
  }
}

int32_t dtype_to_onnx(graph::DType dtype) {
  switch (dtype) {
    case graph::DType::kFloat32:
      return onnx::TensorProto_DataType_FLOAT;
    case graph::DType::kInt64:
      return onnx::TensorProto_DataType_INT64;
    case graph::DType::kInt32:
      return onnx::TensorProto_DataType_INT32;
    case graph::DType::kBool:
      return onnx::TensorProto_DataType_BOOL;
    case graph::DType::kInt8:
      return onnx::TensorProto_DataType_INT8;
    case graph::DType::kUInt8:
      return onnx::TensorProto_DataType_UINT8;
  }
  return onnx::TensorProto_DataType_UNDEFINED;
}

namespace {

template <typename T>
Status copy_raw(const std::string& raw, int64_t count, const std::string& name,
                std::vector<T>* out) {
  if (static_cast<int64_t>(raw.size()) != count * static_cast<int64_t>(sizeof(T)))
    return invalid_argument("tensor '" + name + "' raw_data has " + std::to_string(raw.size()) +
                            " bytes, expected " + std::to_string(count * sizeof(T)));
  out->resize(count);
  // An empty tensor's vector has no storage: memcpy's pointers must not be null even for 0.
  if (!raw.empty()) std::memcpy(out->data(), raw.data(), raw.size());
  return ok_status();
}

}  // namespace

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
  graph::Tensor t;
  t.shape = shape;
  switch (p.data_type()) {
    case onnx::TensorProto_DataType_FLOAT:
      t.dtype = graph::DType::kFloat32;
      if (p.has_raw_data()) {
        TT_RETURN_IF_ERROR(copy_raw(p.raw_data(), count, p.name(), &t.f32));
      } else {
        t.f32.assign(p.float_data().begin(), p.float_data().end());
      }
      if (static_cast<int64_t>(t.f32.size()) != count)
        return invalid_argument("tensor '" + p.name() + "' holds " + std::to_string(t.f32.size()) +
                                " values for shape [" + shape_to_string(shape) + "]");
      return t;
    default:
      break;
  }
  auto dtype = dtype_from_onnx(p.data_type());
  if (!dtype)
    return unimplemented("tensor '" + p.name() + "' has dtype " + onnx_dtype_name(p.data_type()) +
                         " (supported: FLOAT, INT64, INT32, BOOL, INT8, UINT8)");
  t.dtype = *dtype;
  if (p.has_raw_data()) {
    switch (t.dtype) {
      case graph::DType::kInt64:
        TT_RETURN_IF_ERROR(copy_raw(p.raw_data(), count, p.name(), &t.i64));
        break;
      case graph::DType::kInt32: {
        std::vector<int32_t> narrow;
        TT_RETURN_IF_ERROR(copy_raw(p.raw_data(), count, p.name(), &narrow));
        t.i64.assign(narrow.begin(), narrow.end());
        break;
      }
      case graph::DType::kInt8: {
        std::vector<int8_t> narrow;
        TT_RETURN_IF_ERROR(copy_raw(p.raw_data(), count, p.name(), &narrow));
        t.i64.assign(narrow.begin(), narrow.end());
        break;
      }
      default: {  // bool, uint8: one unsigned byte each
        std::vector<uint8_t> narrow;
        TT_RETURN_IF_ERROR(copy_raw(p.raw_data(), count, p.name(), &narrow));
        t.i64.assign(narrow.begin(), narrow.end());
        break;
      }
    }
  } else if (t.dtype == graph::DType::kInt64) {
    t.i64.assign(p.int64_data().begin(), p.int64_data().end());
  } else {  // ONNX keeps int32, int8, uint8 and bool in int32_data
    t.i64.assign(p.int32_data().begin(), p.int32_data().end());
  }
  if (static_cast<int64_t>(t.i64.size()) != count)
    return invalid_argument("tensor '" + p.name() + "' holds " + std::to_string(t.i64.size()) +
                            " values for shape [" + shape_to_string(shape) + "]");
  for (int64_t& v : t.i64) v = graph::wrap_integer(t.dtype, v);
  return t;
}

void tensor_to_proto(const graph::Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->set_name(name);
  for (int64_t d : t.shape) p->add_dims(d);
  p->set_data_type(dtype_to_onnx(t.dtype));
  if (graph::is_float(t.dtype)) {
    p->set_raw_data(
        std::string(reinterpret_cast<const char*>(t.f32.data()), t.f32.size() * sizeof(float)));
  } else if (t.dtype == graph::DType::kInt64) {
    p->set_raw_data(
        std::string(reinterpret_cast<const char*>(t.i64.data()), t.i64.size() * sizeof(int64_t)));
  } else {
    for (int64_t v : t.i64) p->add_int32_data(static_cast<int32_t>(v));
  }
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
