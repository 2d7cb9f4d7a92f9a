#pragma once
/// \file
/// Internal to shape inference: its argument checks, and the output types of the element-wise
/// math, reduction, padding and normalisation operators (shape_inference_math.cc).
#include <string>
#include <vector>

#include "compiler/graph/op.h"
#include "compiler/graph/tensor.h"
#include "support/error.h"

namespace tensortune::graph::infer_detail {

/// "[1x3x224x224]".
std::string shape_str(const Shape& s);
Status expect_inputs(const std::vector<TensorType>& in, size_t lo, size_t hi);
Status expect_float(const TensorType& t, const char* what);

/// The operators after `identity` in ops.def; kInternal for any other.
Expected<TensorType> infer_math_op(OpKind op, const std::vector<TensorType>& in, const Attrs& a);
/// The gathers, scatters and top-k (shape_inference_index.cc); kInternal for any other.
Expected<TensorType> infer_index_op(OpKind op, const std::vector<TensorType>& in, const Attrs& a);

}  // namespace tensortune::graph::infer_detail
