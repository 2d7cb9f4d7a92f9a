#pragma once
/// \file
/// Internal to the ONNX front end: the protobuf types and the tensor conversions between
/// onnx::TensorProto and graph::Tensor. Only front-end .cc files include this.
#include <onnx/onnx_pb.h>

#include "compiler/graph/tensor.h"
#include "support/error.h"

namespace tensortune::frontend {

/// "FLOAT", "UINT8", ... for messages.
std::string onnx_dtype_name(int32_t elem_type);

/// float32 and int64 tensors (int32 widens to int64); raw_data or the typed fields. Other
/// dtypes fail with kUnimplemented naming the tensor and its dtype.
Expected<graph::Tensor> tensor_from_proto(const onnx::TensorProto& proto);

/// Writes raw little-endian data.
void tensor_to_proto(const graph::Tensor& tensor, const std::string& name,
                     onnx::TensorProto* proto);

}  // namespace tensortune::frontend
