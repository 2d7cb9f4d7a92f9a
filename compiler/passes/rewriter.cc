#include "compiler/passes/rewriter.h"

namespace tensortune::passes {

using graph::ValueId;

const graph::Node* producer_of(const graph::Graph& g, graph::ValueId v, graph::OpKind op) {
  const int p = g.value(v).producer;
  return p >= 0 && g.nodes()[p].op == op ? &g.nodes()[p] : nullptr;
}

std::vector<int> only_readers(const graph::Graph& g) {
  const std::vector<int> uses = g.use_counts();
  std::vector<int> reader(uses.size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (graph::ValueId in : g.nodes()[i].inputs)
      if (uses[static_cast<size_t>(in)] == 1) reader[static_cast<size_t>(in)] = static_cast<int>(i);
  return reader;
}

Rewriter::Rewriter(const graph::Graph& source)
    : source_(source), out_(source.name()), map_(source.values().size(), graph::kNoValue) {
  for (ValueId in : source.inputs())
    map_[in] = out_.add_input(source.value(in).name, source.type(in));
}

ValueId Rewriter::map(ValueId old_id) {
  if (map_[old_id] == graph::kNoValue) {
    const graph::Value& v = source_.value(old_id);
    TT_CHECK(v.constant) << "value '" << v.name << "' used before it was rewritten";
    map_[old_id] = out_.add_constant(v.name, v.constant);
  }
  return map_[old_id];
}

Expected<ValueId> Rewriter::copy(const graph::Node& node) {
  std::vector<ValueId> inputs;
  for (ValueId in : node.inputs) inputs.push_back(map(in));
  TT_ASSIGN_OR_RETURN(ValueId id, out_.add_node(node.op, node.name, std::move(inputs), node.attrs));
  out_.mutable_nodes().back().fusion_group = node.fusion_group;
  map_[node.output] = id;
  return id;
}

Expected<ValueId> Rewriter::emit(graph::OpKind op, std::string name, std::vector<ValueId> inputs,
                                 graph::Attrs attrs) {
  return out_.add_node(op, std::move(name), std::move(inputs), std::move(attrs));
}

graph::Graph Rewriter::finish() {
  for (size_t i = 0; i < source_.outputs().size(); ++i)
    out_.add_output(map(source_.outputs()[i]), source_.output_name(i));
  return std::move(out_);
}

}  // namespace tensortune::passes
