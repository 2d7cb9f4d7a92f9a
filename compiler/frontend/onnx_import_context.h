#pragma once
/// \file
/// Internal to the ONNX importer: the state shared by the per-operator converters (the graph
/// being built, ONNX names to values, the opset) and attribute reading.
#include <map>
#include <optional>
#include <string>

#include "compiler/frontend/onnx_proto.h"
#include "compiler/graph/graph.h"

namespace tensortune::frontend {

class ImportContext {
 public:
  ImportContext(graph::Graph& graph, int64_t opset) : graph_(graph), opset_(opset) {}

  graph::Graph& graph() { return graph_; }
  int64_t opset() const { return opset_; }

  void bind(const std::string& onnx_name, graph::ValueId id) { names_[onnx_name] = id; }
  std::optional<graph::ValueId> find(const std::string& onnx_name) const;

  /// True when input i is present and not the empty name ONNX uses for "omitted".
  bool has_input(const onnx::NodeProto& node, int i) const;
  /// Input i, or an error naming the node and the missing input.
  Expected<graph::ValueId> input(const onnx::NodeProto& node, int i) const;
  /// Input i's value when it is a constant (after shape folding), else an error saying that
  /// the operator needs it constant.
  Expected<const graph::Tensor*> constant_input(const onnx::NodeProto& node, int i,
                                                const char* what) const;
  /// Input i as a list of integers (a constant int64 tensor).
  Expected<std::vector<int64_t>> int_list_input(const onnx::NodeProto& node, int i,
                                                const char* what) const;

  /// Adds a node; int64 results of constant inputs (shape arithmetic) and shapes of known
  /// shapes are folded to constants on the spot, so that shapes infer downstream.
  Expected<graph::ValueId> emit(graph::OpKind op, const std::string& name,
                                std::vector<graph::ValueId> inputs, graph::Attrs attrs = {});

 private:
  graph::Graph& graph_;
  int64_t opset_;
  std::map<std::string, graph::ValueId> names_;
};

/// Reads a NodeProto's attributes by name, with defaults.
class NodeAttributes {
 public:
  explicit NodeAttributes(const onnx::NodeProto& node);
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback) const;
  std::string get_string(const std::string& name, std::string fallback) const;
  const onnx::AttributeProto* get(const std::string& name) const;

 private:
  std::map<std::string, const onnx::AttributeProto*> map_;
};

/// A node's display name: its ONNX name, or "<op_type>_<index>" when it has none.
std::string node_label(const onnx::NodeProto& node);

using Converter = Status (*)(ImportContext&, const onnx::NodeProto&);
/// ONNX op_type -> converter (onnx_ops.cc).
const std::map<std::string, Converter>& onnx_converters();

}  // namespace tensortune::frontend
