// FuseOps marks groups; it does not change the computation. A group is an anchor (conv2d,
// conv2d_nchwc, dense, matmul) followed by a chain of element-wise ops, each the single
// consumer of the previous one and of the anchor's output shape (an epilogue never
// broadcasts the anchor's output up), or a chain of element-wise ops on their own.
#include "compiler/passes/passes.h"

namespace tensortune::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;

bool is_elementwise(OpKind op) {
  return graph::is_unary_elementwise(op) || graph::is_binary_elementwise(op) ||
         op == OpKind::kBiasAdd;
}

Expected<Graph> run(const Graph& input) {
  Graph g = input;
  auto& nodes = g.mutable_nodes();
  const auto uses = g.use_counts();
  std::vector<int> consumer(g.values().size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (auto in : nodes[i].inputs) consumer[in] = static_cast<int>(i);
  for (auto& n : nodes) n.fusion_group = -1;

  int next_group = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].fusion_group >= 0) continue;
    const int group = next_group++;
    nodes[i].fusion_group = group;
    if (!is_anchor(nodes[i].op) && !is_elementwise(nodes[i].op)) continue;
    const auto& shape = g.type(nodes[i].output).shape;
    auto v = nodes[i].output;
    while (uses[v] == 1 && consumer[v] >= 0) {
      Node& c = nodes[consumer[v]];
      if (!is_elementwise(c.op) || c.fusion_group >= 0 || g.type(c.output).shape != shape) break;
      // The group runs where its first node is, so every other operand of the epilogue
      // must exist by then.
      bool ready = true;
      for (auto in : c.inputs)
        if (in != v && g.value(in).producer >= static_cast<int>(i)) ready = false;
      if (!ready) break;
      c.fusion_group = group;
      v = c.output;
    }
  }
  return g;
}

}  // namespace

Pass fuse_ops() {
  return Pass{"FuseOps",
              1,
              "every node gets a fusion group: an anchor with its element-wise epilogue chain, "
              "an element-wise chain, or itself alone",
              {},
              run};
}

}  // namespace tensortune::passes
