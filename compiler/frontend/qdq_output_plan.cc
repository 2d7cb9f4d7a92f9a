#include "compiler/frontend/qdq_output_plan.h"

#include <set>

namespace tensortune::frontend {

namespace {

/// A node a runtime folds into the layer before it: a batch norm (into the weights), a Relu or
/// Clip (into the quantization's clip).
bool folds_into_layer(const onnx::NodeProto& n) {
  return n.op_type() == "BatchNormalization" || n.op_type() == "Relu" || n.op_type() == "Clip";
}

/// An Add of a constant (a bias exporters write after a Gemm or MatMul): part of the layer.
bool adds_a_constant(const onnx::NodeProto& n, const OnnxGraphIndex& index) {
  if (n.op_type() != "Add" || n.input_size() != 2) return false;
  return !index.initializer_of(n.input(0)).empty() || !index.initializer_of(n.input(1)).empty();
}

}  // namespace

QuantizedOutputPlan plan_quantized_outputs(const OnnxGraphIndex& index,
                                           const std::map<int, int>& layers) {
  const onnx::GraphProto& g = index.g;
  QuantizedOutputPlan plan;
  std::set<std::string> quantized;
  std::set<int> result_nodes;
  for (const auto& [layer, result] : layers) result_nodes.insert(result);
  // The value to quantize for a result: after the bias add, batch norm, Relu or Clip that alone
  // reads it (as exporters without folding write them); nothing
  // for a graph output, or for a value nothing reads.
  auto settle = [&](std::string value) -> std::string {
    for (int hops = 0; hops < 4; ++hops) {
      const std::vector<int>& readers = index.readers_of(value);
      if (readers.size() != 1 || readers[0] < 0) break;
      const onnx::NodeProto& reader = g.node(readers[0]);
      if (!folds_into_layer(reader) && !adds_a_constant(reader, index)) break;
      value = reader.output(0);
    }
    for (int r : index.readers_of(value))
      if (r < 0) return "";
    return index.readers_of(value).empty() ? "" : value;
  };
  auto add = [&](const std::string& value) {
    if (value.empty() || !quantized.insert(value).second) return;
    plan.values.push_back(value);
  };
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    if (auto layer = layers.find(i); layer != layers.end()) {
      add(settle(g.node(layer->second).output(0)));
    } else if (n.op_type() == "Add" && n.input_size() == 2 && !result_nodes.count(i) &&
               quantized.count(n.input(0)) && quantized.count(n.input(1))) {
      add(settle(n.output(0)));
    } else if (n.op_type() == "MaxPool" && n.output_size() == 1 && n.input_size() == 1 &&
               quantized.count(n.input(0))) {
      const std::string out = n.output(0);
      bool graph_output = false;
      for (int r : index.readers_of(out)) graph_output |= r < 0;
      if (graph_output || index.readers_of(out).empty()) continue;
      auto root = plan.same_as.find(n.input(0));
      plan.same_as[out] = root == plan.same_as.end() ? n.input(0) : root->second;
      add(out);
    }
  }
  return plan;
}

}  // namespace tensortune::frontend
