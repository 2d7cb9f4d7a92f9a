#include "compiler/passes/pass.h"

namespace tensortune::passes {

Expected<graph::Graph> run_pass(const Pass& pass, const graph::Graph& graph,
                                const PassContext& context) {
  graph::Graph current = graph;
  for (const Pass& pre : pass.prerequisites) {
    TT_ASSIGN_OR_RETURN(current, run_pass(pre, current, context));
  }
  auto result = pass.run(current);
  if (!result) return result.error().with_context("pass " + pass.name);
  if (context.after_pass) context.after_pass(pass.name, *result);
  return result;
}

Expected<graph::Graph> run_pipeline(const std::vector<Pass>& passes, const graph::Graph& graph,
                                    const PassContext& context) {
  graph::Graph current = graph;
  for (const Pass& pass : passes) {
    if (pass.opt_level > context.opt_level) continue;
    TT_ASSIGN_OR_RETURN(current, run_pass(pass, current, context));
  }
  return current;
}

}  // namespace tensortune::passes
