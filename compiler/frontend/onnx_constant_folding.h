#pragma once
/// \file
/// Internal to the ONNX front end: weights written as computations of constants become
/// initializers. Exporters write weights in several forms: paddle2onnx, older tf2onnx and torch
/// exports with constant folding off put each one in a `Constant` node, often behind an
/// Identity, a Cast, a Reshape, a Transpose or a (Un)Squeeze. What reads weights as
/// initializers (the quantizer) sees them all after this.
#include <string>

#include "compiler/frontend/onnx_proto.h"
#include "support/error.h"

namespace tensortune::frontend {

/// Turns into initializers, in node order: every `Constant` node (value, value_float(s),
/// value_int(s)), and every Identity, Cast, Reshape, Transpose, Squeeze, Unsqueeze and Flatten
/// whose inputs are all initializers; the nodes go. A node whose output is a graph output, or
/// whose tensors this front end does not hold, stays. Returns the nodes folded; errors name the
/// node (a Reshape to a shape its data does not fill, a Transpose's bad perm).
Expected<int> fold_constant_weights(onnx::GraphProto* graph, int64_t opset);

}  // namespace tensortune::frontend
