#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

Expected<graph::Graph> run(const graph::Graph& g) {
  const auto& nodes = g.nodes();
  std::vector<bool> live_value(g.values().size(), false);
  for (graph::ValueId o : g.outputs()) live_value[o] = true;
  std::vector<bool> live_node(nodes.size(), false);
  for (int i = static_cast<int>(nodes.size()) - 1; i >= 0; --i) {
    if (!live_value[nodes[i].output]) continue;
    live_node[i] = true;
    for (graph::ValueId in : nodes[i].inputs) live_value[in] = true;
  }
  Rewriter rw(g);  // constants are copied on first use, so dead ones vanish too
  for (size_t i = 0; i < nodes.size(); ++i)
    if (live_node[i]) TT_RETURN_IF_ERROR(rw.copy(nodes[i]));
  return rw.finish();
}

}  // namespace

Pass dead_code_elimination() {
  return Pass{"DeadCodeElimination",
              0,
              "nodes and constants that no output depends on are removed",
              {},
              run};
}

}  // namespace tensortune::passes
