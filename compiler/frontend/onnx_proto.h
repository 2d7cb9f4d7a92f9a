#pragma once
/// \file
/// Internal to the ONNX front end: the protobuf types and the tensor conversions between
/// onnx::TensorProto and graph::Tensor. Only front-end .cc files include this.
#include <onnx/onnx_pb.h>

#include <optional>

#include "compiler/graph/tensor.h"
#include "support/error.h"

namespace tensortune::frontend {

/// "FLOAT", "UINT8", ... for messages.
std::string onnx_dtype_name(int32_t elem_type);

/// Our dtype of an ONNX elem_type; nothing for the ones we do not hold (strings, complex,
/// the float8s).
std::optional<graph::DType> dtype_from_onnx(int32_t elem_type);
int32_t dtype_to_onnx(graph::DType dtype);
/// The ONNX names of the dtypes we hold, for messages.
extern const char* kSupportedOnnxDTypes;

/// Every dtype we hold, from raw_data or the typed fields (float64 rounded to float32; uint64
/// values from 2^63 on refused). Other dtypes fail with kUnimplemented naming the tensor and
/// its dtype.
Expected<graph::Tensor> tensor_from_proto(const onnx::TensorProto& proto);

/// Writes raw little-endian data.
void tensor_to_proto(const graph::Tensor& tensor, const std::string& name,
                     onnx::TensorProto* proto);

}  // namespace tensortune::frontend
