#pragma once
/// \file
/// Passes and the one rule that decides whether a pass runs:
///
///   * A pass invoked directly (`run_pass`) always runs, whatever the opt level.
///   * A pipeline (`run_pipeline`) runs each of its passes whose `opt_level` is at most the
///     context's opt level, in order, and skips the others.
///   * A pass's prerequisites are part of its definition (a list of Pass values, not names
///     looked up at run time): whenever the pass runs, they run first, unconditionally.
///
/// So `run_pass(fold_scale_axis(), g, {.opt_level = 2})` folds scales (unlike TVM, where the
/// same call under the default opt level 2 silently did nothing), and a pipeline at opt
/// level 2 never runs it.
#include <functional>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"

namespace tensortune::passes {

struct PassContext {
  int opt_level = 2;
  /// Called after every pass that ran, prerequisites included (`--print-after-each`).
  std::function<void(const std::string& pass_name, const graph::Graph&)> after_pass;
};

struct Pass {
  std::string name;
  int opt_level = 0;
  /// One line: what the pass guarantees.
  std::string contract;
  std::vector<Pass> prerequisites;
  std::function<Expected<graph::Graph>(const graph::Graph&)> run;
};

/// Runs the prerequisites, then the pass; the error names the pass.
Expected<graph::Graph> run_pass(const Pass& pass, const graph::Graph& graph,
                                const PassContext& context);

/// Runs the passes with opt_level <= context.opt_level, in order.
Expected<graph::Graph> run_pipeline(const std::vector<Pass>& passes, const graph::Graph& graph,
                                    const PassContext& context);

}  // namespace tensortune::passes
