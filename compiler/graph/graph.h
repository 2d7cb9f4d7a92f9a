#pragma once
/// \file
/// The graph IR: values (graph inputs, constants, node outputs) with inferred types, and
/// nodes in topological order, each with one output. A Graph is a value: passes take one
/// and return a new one. Constants are shared immutable tensors, so copying a graph never
/// copies weights.
#include <memory>
#include <string>
#include <vector>

#include "compiler/graph/op.h"
#include "compiler/graph/tensor.h"
#include "support/error.h"

namespace tensortune::graph {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

struct Value {
  std::string name;
  TensorType type;
  /// Index of the producing node; -1 for graph inputs and constants.
  int producer = -1;
  /// Set for constants.
  std::shared_ptr<const Tensor> constant;
};

struct Node {
  OpKind op = OpKind::kIdentity;
  std::string name;
  std::vector<ValueId> inputs;
  ValueId output = kNoValue;
  Attrs attrs;
  /// Fusion group assigned by FuseOps; -1 when the graph has not been fused.
  int fusion_group = -1;
};

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }

  const Value& value(ValueId id) const { return values_.at(id); }
  const TensorType& type(ValueId id) const { return values_.at(id).type; }
  bool is_constant(ValueId id) const { return values_.at(id).constant != nullptr; }
  const Tensor* constant(ValueId id) const { return values_.at(id).constant.get(); }

  ValueId add_input(std::string name, TensorType type);
  ValueId add_constant(std::string name, Tensor tensor);
  ValueId add_constant(std::string name, std::shared_ptr<const Tensor> tensor);
  /// Infers the output type from the inputs' types and the attributes; the error names the
  /// node, the operator and the offending shape or attribute.
  Expected<ValueId> add_node(OpKind op, std::string name, std::vector<ValueId> inputs,
                             Attrs attrs = {});
  /// `name` is what users call the output (the model's own name for it); passes replace the
  /// value an output reads, often by one of another name, and the output keeps its name.
  /// Without one, the value's name.
  void add_output(ValueId id, std::string name = {}) {
    outputs_.push_back(id);
    output_names_.push_back(name.empty() ? values_.at(id).name : std::move(name));
  }
  void set_output(size_t index, ValueId id) { outputs_.at(index) = id; }
  const std::string& output_name(size_t index) const { return output_names_.at(index); }

  /// How many node inputs and graph outputs read each value.
  std::vector<int> use_counts() const;
  /// Input id of the graph input with this name, or kNoValue.
  ValueId find_input(const std::string& name) const;

 private:
  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<std::string> output_names_;  ///< one per output
};

/// The output type of `op` applied to inputs of these types, or an error naming what does not
/// fit.
Expected<TensorType> infer_type(OpKind op, const std::vector<TensorType>& inputs,
                                const Attrs& attrs);

}  // namespace tensortune::graph
