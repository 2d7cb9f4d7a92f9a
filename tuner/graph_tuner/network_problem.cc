// Implements network_problem.h: one walk over the NCHW graph, tracking which problem node decides
// the channel block of every value (AlterOpLayout's rule: a conv decides its output's; ops that
// keep the layout pass their data input's on).
#include "tuner/graph_tuner/network_problem.h"

#include <algorithm>
#include <set>

#include "compiler/driver/kernel_choice.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/passes/fusion_rules.h"
#include "schedule_space/task.h"

namespace tensortune::tuner::graph_tuner {

namespace ss = schedule_space;
using graph::Graph;
using graph::OpKind;
using graph::ValueId;

namespace {

/// Ops whose output must be plain NCHW (or that end the spatial part of the network).
bool needs_plain(OpKind op) {
  return op == OpKind::kFlatten || op == OpKind::kReshape || op == OpKind::kDense ||
         op == OpKind::kSqueeze || op == OpKind::kUnsqueeze;
}

class Builder {
 public:
  Builder(const Graph& g, const driver::TunedConfigs& tuned, const ss::Target& target, int top_k,
          const TransformCostFn& cost)
      : g_(g), tuned_(tuned), target_(target), top_k_(top_k), cost_(cost) {}

  NetworkProblem run() {
    decider_.assign(g_.values().size(), -1);
    for (const graph::Node& n : g_.nodes()) visit(n);
    for (ValueId out : g_.outputs())
      if (!g_.is_constant(out) && g_.type(out).shape.size() == 4) to_plain(out);
    return std::move(out_);
  }

 private:
  size_t count(int node) const { return out_.candidates[static_cast<size_t>(node)].size(); }
  int64_t ic(int node, size_t i) const {
    return out_.candidates[static_cast<size_t>(node)][i].ic_block;
  }
  int64_t oc(int node, size_t i) const {
    return out_.candidates[static_cast<size_t>(node)][i].oc_block;
  }
  double price(const graph::Shape& shape, int64_t from, int64_t to) const {
    return from == to ? 0.0 : cost_(Transform{shape, from, to});
  }

  void visit(const graph::Node& n) {
    ValueId data = graph::kNoValue;
    for (ValueId in : n.inputs)
      if (!g_.is_constant(in)) {
        data = in;
        break;
      }
    if ((n.op == OpKind::kConv2d || n.op == OpKind::kConv2dInteger) && add_conv(n)) return;
    if (data == graph::kNoValue) return;
    if (needs_plain(n.op)) {
      to_plain(data);
      return;
    }
    decider_[static_cast<size_t>(n.output)] = decider_[static_cast<size_t>(data)];
    if (graph::is_binary_elementwise(n.op) && n.inputs.size() == 2 &&
        !g_.is_constant(n.inputs[0]) && !g_.is_constant(n.inputs[1])) {
      const int a = decider_[static_cast<size_t>(n.inputs[0])];
      const int b = decider_[static_cast<size_t>(n.inputs[1])];
      const graph::Shape& shape = g_.type(n.inputs[1]).shape;
      if (a >= 0 && b >= 0 && a != b) {
        // A mismatch re-blocks the second operand to the first's, and the add can no longer
        // fuse into the producing conv's epilogue: it runs as a pass of its own over the tensor,
        // priced as a second transform of that shape (both read and write it once).
        SelectionEdge e{a, b, {}};
        for (size_t i = 0; i < count(a); ++i) {
          e.cost.emplace_back();
          for (size_t j = 0; j < count(b); ++j)
            e.cost.back().push_back(2 * price(shape, oc(b, j), oc(a, i)));
        }
        out_.problem.edges.push_back(std::move(e));
      }
    }
  }

  /// A conv2d with constant weights and groups 1 becomes a problem node (an integer one of
  /// uint8 data and int8 weights as an int8 workload), and so does a depthwise one with records
  /// (without, it keeps its input's block, as AlterOpLayout does); false for others.
  bool add_conv(const graph::Node& n) {
    const auto attrs = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
    if (!g_.is_constant(n.inputs[1])) return false;
    auto w = ss::conv2d_workload(g_.type(n.inputs[0]).shape, g_.type(n.inputs[1]).shape,
                                 attrs.strides, attrs.pads, attrs.dilations);
    if (n.op == OpKind::kConv2dInteger) {
      if (g_.type(n.inputs[0]).dtype != graph::DType::kUInt8 ||
          g_.type(n.inputs[1]).dtype != graph::DType::kInt8)
        return false;
      if (w) w->precision = passes::integer_precision(g_, n.inputs[1]);
    }
    if (!w || (w->groups != 1 && !w->is_depthwise())) return false;
    const auto blocked = driver::templates_of_layout(*w, target_, {}, ss::NetworkLayout::kBlocked);
    if (blocked.empty()) return false;
    auto candidates = tuned_.candidates_by_blocks(*w, blocked, target_);
    const bool tuned = !candidates.empty();
    if (!tuned && w->is_depthwise()) return false;
    if (candidates.size() > static_cast<size_t>(top_k_))
      candidates.resize(static_cast<size_t>(top_k_));
    if (!tuned) {  // the first template's default config, as compile runs it
      auto task = ss::make_task(std::string(blocked.front()->name()), *w, target_);
      auto space = task ? ss::make_config_space(*task) : Expected<ss::ConfigSpace>(task.error());
      if (!space) return false;
      ss::TemplateConfig k{*task, *space, ss::default_config(*task, *space)};
      const ss::KernelSignature sig = k.signature();
      candidates.push_back({std::move(k), 0.0, sig.ic_block, sig.oc_block, "", ""});
    }
    const int k = static_cast<int>(out_.nodes.size());
    out_.nodes.push_back(n.name);
    out_.workloads.push_back(*w);
    out_.tuned.push_back(tuned);
    out_.candidates.push_back(std::move(candidates));
    std::vector<double> own;
    for (const auto& c : out_.candidates.back()) own.push_back(c.seconds);
    out_.problem.node_costs.push_back(std::move(own));

    const ValueId input = n.inputs[0];
    const graph::Shape& shape = g_.type(input).shape;
    const int d = decider_[static_cast<size_t>(input)];
    if (d >= 0) {
      SelectionEdge e{d, k, {}};
      for (size_t i = 0; i < count(d); ++i) {
        e.cost.emplace_back();
        for (size_t j = 0; j < count(k); ++j)
          e.cost.back().push_back(price(shape, oc(d, i), ic(k, j)));
      }
      out_.problem.edges.push_back(std::move(e));
    } else {  // from plain NCHW (the network's input, or after a reshape)
      for (size_t j = 0; j < count(k); ++j)
        out_.problem.node_costs.back()[j] += price(shape, 1, ic(k, j));
    }
    decider_[static_cast<size_t>(n.output)] = k;
    return true;
  }

  /// The value is needed in plain NCHW: a transform back from its decider's output block.
  void to_plain(ValueId v) {
    const int d = decider_[static_cast<size_t>(v)];
    if (d < 0 || g_.type(v).shape.size() != 4) return;
    for (size_t i = 0; i < count(d); ++i)
      out_.problem.node_costs[static_cast<size_t>(d)][i] += price(g_.type(v).shape, oc(d, i), 1);
  }

  const Graph& g_;
  const driver::TunedConfigs& tuned_;
  const ss::Target& target_;
  int top_k_;
  const TransformCostFn& cost_;
  std::vector<int> decider_;  ///< by value: the problem node deciding its block, or -1
  NetworkProblem out_;
};

}  // namespace

NetworkProblem build_network_problem(const Graph& model, const driver::TunedConfigs& tuned,
                                     const ss::Target& target, int top_k,
                                     const TransformCostFn& cost) {
  return Builder(model, tuned, target, top_k, cost).run();
}

std::vector<Transform> transforms_needed(const Graph& model, const driver::TunedConfigs& tuned,
                                         const ss::Target& target, int top_k) {
  std::set<Transform> seen;
  const TransformCostFn collect = [&](const Transform& t) {
    seen.insert(t);
    return 0.0;
  };
  build_network_problem(model, tuned, target, top_k, collect);
  return {seen.begin(), seen.end()};
}

}  // namespace tensortune::tuner::graph_tuner
