#pragma once
/// \file
/// Which values a QDQ model quantizes besides its layers' inputs, when it quantizes as ONNX
/// Runtime's quantizer does: each quantized layer's output, so that a runtime that fuses
/// DequantizeLinear -> Conv -> QuantizeLinear into one integer kernel (ONNX Runtime's
/// QLinearConv, QLinearMatMul) finds the whole pattern; a residual Add of two such values; a
/// MaxPool of one. A Relu or Clip that alone reads a layer's output is quantized after, not
/// before, so that the runtime can drop it into the quantization's clip (a range that starts at
/// 0 has zero point 0); so is a batch norm, which runtimes fold into the layer's weights.
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_graph_index.h"

namespace tensortune::frontend {

struct QuantizedOutputPlan {
  /// Values that get QuantizeLinear -> DequantizeLinear where they are computed, every reader
  /// then reading the dequantized value; in graph order. Never a graph output.
  std::vector<std::string> values;
  /// A value quantized with another's scale and zero point (a MaxPool's output takes its
  /// input's: the maximum of quantized values is one of them, so runtimes keep it in bytes).
  std::map<std::string, std::string> same_as;
};

/// `layers`: each quantized layer's node -> the node that computes its result (itself, or the
/// Add that adds a MatMul's bias).
QuantizedOutputPlan plan_quantized_outputs(const OnnxGraphIndex& index,
                                           const std::map<int, int>& layers);

}  // namespace tensortune::frontend
