#include "compiler/graph/graph.h"

namespace tensortune::graph {

ValueId Graph::add_input(std::string name, TensorType type) {
  values_.push_back(Value{std::move(name), std::move(type), -1, nullptr});
  const ValueId id = static_cast<ValueId>(values_.size() - 1);
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_constant(std::string name, Tensor tensor) {
  return add_constant(std::move(name), std::make_shared<const Tensor>(std::move(tensor)));
}

ValueId Graph::add_constant(std::string name, std::shared_ptr<const Tensor> tensor) {
  TensorType type = tensor->type();
  values_.push_back(Value{std::move(name), std::move(type), -1, std::move(tensor)});
  return static_cast<ValueId>(values_.size() - 1);
}

Expected<ValueId> Graph::add_node(OpKind op, std::string name, std::vector<ValueId> inputs,
                                  Attrs attrs) {
  std::vector<TensorType> types;
  types.reserve(inputs.size());
  for (ValueId in : inputs) {
    TT_CHECK(in >= 0 && in < static_cast<ValueId>(values_.size())) << "bad input id " << in;
    types.push_back(values_[in].type);
  }
  auto type = infer_type(op, types, attrs);
  if (!type) {
    std::string shapes;
    for (const auto& t : types) shapes += (shapes.empty() ? "" : ", ") + type_string(t);
    return type.error().with_context("node '" + name + "' (" + op_name(op) + " of " + shapes + ")");
  }
  Node node;
  node.op = op;
  node.name = name;
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  values_.push_back(
      Value{std::move(name), std::move(type).value(), static_cast<int>(nodes_.size()), nullptr});
  node.output = static_cast<ValueId>(values_.size() - 1);
  nodes_.push_back(std::move(node));
  return nodes_.back().output;
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(values_.size(), 0);
  for (const Node& n : nodes_)
    for (ValueId in : n.inputs) ++uses[in];
  for (ValueId out : outputs_) ++uses[out];
  return uses;
}

ValueId Graph::find_input(const std::string& name) const {
  for (ValueId id : inputs_)
    if (values_[id].name == name) return id;
  return kNoValue;
}

}  // namespace tensortune::graph
