// FuseOps marks groups; it does not change the computation. The groups are final: lowering
// builds one kernel (or one interpreted step) per group and never splits one, so the rules of
// what fuses are fusion_rules.h's, asked here once.
//
// A group is a kernel anchor followed by the longest chain of epilogue nodes its kernel fuses,
// each the single consumer of the previous one (or, with store_midway, of a value other groups
// read too, when the chain from it ends in a quantizing cast), with the dequantizations of bytes
// its kernel reads as residuals (which then compute nothing themselves); or a chain of float
// element-wise ops over one shape on their own, perhaps ending in a quantizing cast; or any other
// node alone.
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/passes.h"

namespace tensortune::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::ValueId;

/// The nodes that read each value, in order.
std::vector<std::vector<int>> readers_of(const Graph& g) {
  std::vector<std::vector<int>> readers(g.values().size());
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (auto in : g.nodes()[i].inputs)
      if (readers[in].empty() || readers[in].back() != static_cast<int>(i))
        readers[in].push_back(static_cast<int>(i));
  return readers;
}

class Fuser {
 public:
  Fuser(Graph& g, FuseOpsOptions options)
      : g_(g), options_(options), uses_(g.use_counts()), readers_(readers_of(g)) {}

  void run() {
    auto& nodes = g_.mutable_nodes();
    for (auto& n : nodes) n.fusion_group = -1;
    int next_group = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].fusion_group >= 0) continue;
      const int group = next_group++;
      nodes[i].fusion_group = group;
      const bool anchor = is_kernel_anchor(g_, nodes[i]) && served(nodes[i]);
      const bool chain = !anchor && ((is_elementwise(nodes[i].op) && is_float_node(g_, nodes[i])) ||
                                     is_quantizing_cast(g_, nodes[i]));
      if (!anchor && !chain) continue;
      ValueId v = nodes[i].output;
      for (int c = next(i, anchor, v); c >= 0; c = next(i, anchor, v)) {
        nodes[static_cast<size_t>(c)].fusion_group = group;
        if (anchor) absorb_dequantized_operands(c, v, static_cast<int>(i), group);
        v = nodes[static_cast<size_t>(c)].output;
      }
    }
  }

 private:
  bool served(const Node& n) const {
    if (!options_.batch_matmul_served) return true;
    const auto w = batch_matmul_anchor(g_, n);
    return !w || options_.batch_matmul_served(*w);
  }

  /// The node after `v` in the group of node `first`: v's single reader if it fuses; with
  /// store_midway, an anchor's float v read by several nodes continues into the one reader
  /// whose chain ends in a quantizing cast. -1: the group ends at v.
  int next(size_t first, bool anchor, ValueId v) const {
    if (uses_[v] == 1 && readers_[v].size() == 1)
      return fuses(first, anchor, v, readers_[v][0]) ? readers_[v][0] : -1;
    if (!anchor || !options_.store_midway || g_.type(v).dtype != graph::DType::kFloat32) return -1;
    for (int c : readers_[v])
      if (fuses(first, anchor, v, c) && ends_quantizing(first, v, c)) return c;
    return -1;
  }

  /// Whether node `c`, a reader of `v`, joins the group of node `first`.
  bool fuses(size_t first, bool anchor, ValueId v, int c_index) const {
    const Node& c = g_.nodes()[static_cast<size_t>(c_index)];
    if (c.fusion_group >= 0) return false;
    // A chain ends with its quantizing cast: what follows reads bytes.
    if (!anchor && g_.type(v).dtype != graph::DType::kFloat32) return false;
    const bool cast = anchor ? c.op == graph::OpKind::kCast : is_quantizing_cast(g_, c);
    if (!is_elementwise(c.op) && !cast) return false;
    // The group runs where its first node is, so every other operand of the chain must exist by
    // then: computed before that node, or by a group that runs earlier (a group's later nodes,
    // such as a quantize-dequantize pair a model lists after other layers, run with its head).
    const int group = g_.nodes()[first].fusion_group;
    for (auto in : c.inputs) {
      const int producer = g_.value(in).producer;
      if (in == v || producer < static_cast<int>(first)) continue;
      // A residual the kernel reads as bytes: its dequantization joins the group.
      if (anchor && absorbable(in, static_cast<int>(first), group)) continue;
      const int producer_group = g_.nodes()[static_cast<size_t>(producer)].fusion_group;
      if (producer_group < 0 || producer_group >= group) return false;
    }
    const Node& head = g_.nodes()[first];
    if (anchor && c.op == graph::OpKind::kGelu && !options_.gelu_in_epilogue) return false;
    if (anchor) return fuse_epilogue_node(g_, head, c, v).has_value();
    return g_.type(c.output).shape == g_.type(head.output).shape && (cast || is_float_node(g_, c));
  }

  /// Whether `operand` is a dequantization of bytes that exist when group `group` (of node
  /// `first`) runs, the chain not yet in a group (fusion_rules.h's dequantized_bytes).
  bool absorbable(ValueId operand, int first, int group) const {
    if (!options_.dequantize_in_epilogue) return false;
    const auto d = dequantized_bytes(g_, operand);
    if (!d) return false;
    const int producer = g_.value(d->bytes).producer;
    if (producer >= first) {
      const int producer_group = g_.nodes()[static_cast<size_t>(producer)].fusion_group;
      if (producer_group < 0 || producer_group >= group) return false;
    }
    for (int n : d->nodes)
      if (g_.nodes()[static_cast<size_t>(n)].fusion_group >= 0) return false;
    return true;
  }

  /// The dequantized-bytes chains node `c` of the group of anchor `first` reads beside the
  /// chain value `v`: the kernel reads their bytes (EpilogueOp::kAddDequantized), so they join the
  /// group.
  void absorb_dequantized_operands(int c, ValueId v, int first, int group) {
    const Node& n = g_.nodes()[static_cast<size_t>(c)];
    for (ValueId in : n.inputs) {
      if (in == v || !absorbable(in, first, group)) continue;
      const std::vector<int> chain = dequantized_bytes(g_, in)->nodes;
      for (int d : chain) g_.mutable_nodes()[static_cast<size_t>(d)].fusion_group = group;
    }
  }

  /// Whether the chain of single readers from `v` through node `c` fuses into the anchor
  /// `first`'s epilogue up to a quantizing cast.
  bool ends_quantizing(size_t first, ValueId v, int c) const {
    while (true) {
      const Node& n = g_.nodes()[static_cast<size_t>(c)];
      if (is_quantizing_cast(g_, n)) return true;
      v = n.output;
      if (uses_[v] != 1 || readers_[v].size() != 1) return false;
      c = readers_[v][0];
      if (!fuses(first, true, v, c)) return false;
    }
  }

  Graph& g_;
  FuseOpsOptions options_;
  std::vector<int> uses_;
  std::vector<std::vector<int>> readers_;
};

Expected<Graph> run(const Graph& input, FuseOpsOptions options) {
  Graph g = input;
  Fuser(g, options).run();
  return g;
}

}  // namespace

Pass fuse_ops(FuseOpsOptions options) {
  return Pass{"FuseOps",
              1,
              "every node gets a fusion group, the one it runs in: a kernel anchor with the "
              "epilogue chain its kernel fuses, a float element-wise chain, or itself alone",
              {},
              [options](const Graph& g) { return run(g, options); }};
}

}  // namespace tensortune::passes
