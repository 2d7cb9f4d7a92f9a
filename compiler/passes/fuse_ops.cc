// FuseOps marks groups; it does not change the computation. The groups are final: lowering
// builds one kernel (or one interpreted step) per group and never splits one, so the rules of
// what fuses are fusion_rules.h's, asked here once.
//
// A group is a kernel anchor followed by the longest chain of epilogue nodes its kernel fuses,
// each the single consumer of the previous one; or a chain of float element-wise ops over one
// shape on their own, perhaps ending in a quantizing cast; or any other node alone.
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/passes.h"

namespace tensortune::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::ValueId;

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
    const bool anchor = is_kernel_anchor(g, nodes[i]);
    const bool chain = !anchor && ((is_elementwise(nodes[i].op) && is_float_node(g, nodes[i])) ||
                                   is_quantizing_cast(g, nodes[i]));
    if (!anchor && !chain) continue;
    const auto& shape = g.type(nodes[i].output).shape;
    ValueId v = nodes[i].output;
    while (uses[v] == 1 && consumer[v] >= 0) {
      Node& c = nodes[consumer[v]];
      if (c.fusion_group >= 0) break;
      // A chain ends with its quantizing cast: what follows reads bytes.
      if (!anchor && g.type(v).dtype != graph::DType::kFloat32) break;
      const bool cast = anchor ? c.op == graph::OpKind::kCast : is_quantizing_cast(g, c);
      if (!is_elementwise(c.op) && !cast) break;
      // The group runs where its first node is, so every other operand of the chain must
      // exist by then.
      bool ready = true;
      for (auto in : c.inputs)
        if (in != v && g.value(in).producer >= static_cast<int>(i)) ready = false;
      if (!ready) break;
      if (anchor ? !fuse_epilogue_node(g, nodes[i], c, v)
                 : g.type(c.output).shape != shape || (!cast && !is_float_node(g, c)))
        break;
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
              "every node gets a fusion group, the one it runs in: a kernel anchor with the "
              "epilogue chain its kernel fuses, a float element-wise chain, or itself alone",
              {},
              run};
}

}  // namespace tensortune::passes
