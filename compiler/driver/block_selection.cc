#include "compiler/driver/block_selection.h"

#include <algorithm>

#include "compiler/driver/kernel_choice.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/passes.h"

namespace tensortune::driver {

namespace ss = schedule_space;
using graph::Graph;
using graph::OpKind;
using graph::ValueId;

namespace {

/// Which workload decides the block of a value: its producing conv2d's, or the one its data
/// input's producer inherits (element-wise ops, pooling, batch norm, depthwise convolutions
/// without records keep the block of their input, as AlterOpLayout does); -1: plain or unknown.
struct Analysis {
  std::vector<int> decider;        ///< by value: workload index or -1
  std::vector<int> node_workload;  ///< by node: workload index of a conv2d, or -1
  struct Edge {
    int a, b;      ///< workload indices
    bool b_input;  ///< true: a's output block against b's input block; false: both outputs
    double bytes;
  };
  std::vector<Edge> edges;
};

double bytes_of(const Graph& g, ValueId v) {
  return double(graph::buffer_element_size(g.type(v).dtype)) *
         double(graph::num_elements(g.type(v).shape));
}

}  // namespace

BlockSelection select_blocks(const Graph& g, const driver::TunedConfigs& tuned,
                             const ss::Target& target, const ss::AlgorithmFilter& algorithms) {
  BlockSelection out;
  std::vector<std::string> names;
  std::vector<std::vector<driver::TunedConfigs::Candidate>> candidates;
  std::map<std::string, int> index;
  Analysis an;
  an.decider.assign(g.values().size(), -1);
  an.node_workload.assign(g.nodes().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const graph::Node& n = g.nodes()[i];
    ValueId data = graph::kNoValue;
    for (ValueId in : n.inputs)
      if (!g.is_constant(in)) {
        data = in;
        break;
      }
    const auto conv = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
    std::optional<ss::Conv2dWorkload> w;
    // Float convolutions, and the integer ones of FakeQuantizationToInteger (uint8 x int8).
    const bool integer = n.op == OpKind::kConv2dInteger &&
                         g.type(n.inputs[0]).dtype == graph::DType::kUInt8 &&
                         g.type(n.inputs[1]).dtype == graph::DType::kInt8;
    if ((n.op == OpKind::kConv2d || integer) && g.is_constant(n.inputs[1])) {
      auto parsed = ss::conv2d_workload(g.type(n.inputs[0]).shape, g.type(n.inputs[1]).shape,
                                        conv.strides, conv.pads, conv.dilations);
      if (parsed && integer) parsed->precision = passes::integer_precision(g, n.inputs[1]);
      if (parsed && (parsed->groups == 1 || parsed->is_depthwise())) w = *parsed;
    }
    const std::string name = w ? ss::describe_workload(*w) : std::string();
    std::vector<driver::TunedConfigs::Candidate> records;
    if (w && !index.contains(name)) {
      records = tuned.candidates_by_blocks(
          *w, templates_of_layout(*w, target, algorithms, ss::NetworkLayout::kBlocked), target);
      // A depthwise convolution without records keeps its input's block, as AlterOpLayout does.
      if (w->is_depthwise() && records.empty()) w.reset();
    }
    if (w) {
      auto [it, inserted] = index.emplace(name, static_cast<int>(names.size()));
      if (inserted) {
        names.push_back(name);
        candidates.push_back(std::move(records));
      }
      const int k = it->second;
      an.node_workload[i] = k;
      an.decider[n.output] = k;
      if (an.decider[n.inputs[0]] >= 0)
        an.edges.push_back({an.decider[n.inputs[0]], k, true, bytes_of(g, n.inputs[0])});
      continue;
    }
    if (data == graph::kNoValue) continue;
    if (n.op == OpKind::kFlatten || n.op == OpKind::kReshape || n.op == OpKind::kDense) continue;
    an.decider[n.output] = an.decider[data];
    if (graph::is_binary_elementwise(n.op) && n.inputs.size() == 2 && !g.is_constant(n.inputs[0]) &&
        !g.is_constant(n.inputs[1])) {
      const int a = an.decider[n.inputs[0]], b = an.decider[n.inputs[1]];
      // A mismatch re-blocks the second operand and keeps the add out of the conv's epilogue.
      if (a >= 0 && b >= 0) an.edges.push_back({a, b, false, 1.5 * bytes_of(g, n.inputs[1])});
    }
  }
  if (names.empty()) return out;

  // Assignment: a candidate index per workload (workloads without candidates are fixed).
  std::vector<int> pick(names.size(), 0);
  auto cost = [&](const std::vector<int>& p) {
    double s = 0;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const int k = an.node_workload[i];
      if (k >= 0 && !candidates[k].empty()) s += candidates[k][p[k]].seconds;
    }
    for (const auto& e : an.edges) {
      if (candidates[e.a].empty() || candidates[e.b].empty()) continue;
      const auto& ca = candidates[e.a][p[e.a]];
      const auto& cb = candidates[e.b][p[e.b]];
      const int64_t want = e.b_input ? cb.ic_block : cb.oc_block;
      if (ca.oc_block != want) s += e.bytes / kTransformBytesPerSecond;
    }
    return s;
  };
  out.fastest_cost_s = cost(pick);
  double best = out.fastest_cost_s;
  for (int sweep = 0; sweep < 20; ++sweep) {
    bool improved = false;
    for (size_t k = 0; k < names.size(); ++k) {
      for (size_t c = 0; c < candidates[k].size(); ++c) {
        if (static_cast<int>(c) == pick[k]) continue;
        const int old = pick[k];
        pick[k] = static_cast<int>(c);
        const double s = cost(pick);
        if (s < best - 1e-9) {
          best = s;
          improved = true;
        } else {
          pick[k] = old;
        }
      }
    }
    if (!improved) break;
  }
  out.chosen_cost_s = best;
  for (size_t k = 0; k < names.size(); ++k) {
    if (candidates[k].empty()) continue;
    out.chosen.emplace(names[k], candidates[k][pick[k]].kernel);
    out.changed += pick[k] != 0;
  }
  return out;
}

Expected<graph::Graph> convolutions_as_compiled(const graph::Graph& model, const ss::Target& target,
                                                bool integer_kernels,
                                                const ss::AlgorithmFilter& algorithms) {
  graph::Graph seen = model;
  if (integer_kernels) {
    auto served = [&](const ss::Workload& w) {
      return !ss::templates_for(w, ss::target_backend(target), algorithms).empty();
    };
    TT_ASSIGN_OR_RETURN(seen, passes::run_pass(passes::fake_quantization_to_integer(served), seen,
                                               passes::PassContext{}));
  }
  return passes::run_pass(passes::fold_constant(), seen, passes::PassContext{});
}

}  // namespace tensortune::driver
