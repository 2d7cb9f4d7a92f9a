#include "compiler/graph/interpreter.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::Node;
using graph::ValueId;

Expected<graph::Graph> run(const graph::Graph& g) {
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    bool all_constant = true;
    std::vector<ValueId> inputs;
    for (ValueId in : n.inputs) {
      inputs.push_back(rw.map(in));
      all_constant = all_constant && rw.out().is_constant(inputs.back());
    }
    // A shape needs only its input's type, which is always known.
    if (n.op == graph::OpKind::kShape) all_constant = true;
    if (!all_constant) {
      TT_RETURN_IF_ERROR(rw.copy(n));
      continue;
    }
    auto folded = graph::evaluate_on_constants(rw.out(), n, inputs, g.type(n.output));
    if (!folded) return folded.error().with_context("folding node '" + n.name + "'");
    rw.set(n.output, rw.out().add_constant(n.name, std::move(folded).value()));
  }
  return rw.finish();
}

}  // namespace

Pass fold_constant() {
  return Pass{"FoldConstant",
              2,
              "nodes whose inputs are all constants, and shapes of known shapes, become "
              "constants",
              {},
              run};
}

}  // namespace tensortune::passes
