#pragma once
/// \file
/// Internal to the ONNX front end: a BatchNormalization that alone reads a convolution's result
/// folds into the convolution's weights and bias, as runtimes fold it before they run a model
/// and as quantization tools fold it before they quantize one. A quantizer must fold it first:
/// once the weights are int8 behind a DequantizeLinear they are no initializer a runtime can
/// fold a batch norm into, and ONNX Runtime then finds no DequantizeLinear -> Conv ->
/// QuantizeLinear to run as an integer convolution (the batch norm sits between).
#include "compiler/frontend/onnx_proto.h"
#include "support/error.h"

namespace tensortune::frontend {

/// Folds, in node order, every inference BatchNormalization (one output) whose input is the
/// only use of a Conv's result, whose scale, bias, mean and variance are float initializers of
/// one value per output channel, and whose convolution's weight (and bias, if any) are float
/// initializers read by nothing else: weight[o] *= scale[o] / sqrt(var[o] + eps), bias[o] =
/// (bias[o] - mean[o]) * that + B[o]. The convolution then writes the batch norm's output
/// name; the batch norm's initializers stay unless nothing else reads them. Returns the batch
/// norms folded.
Expected<int> fold_batch_norms(onnx::GraphProto* graph);

}  // namespace tensortune::frontend
