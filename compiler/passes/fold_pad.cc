// FoldPad: exporters write a convolution's or an average pool's zero padding as a Pad node in
// front of it (torch for avg_pool2d with count_include_pad, TensorFlow's converters for "SAME"
// convolutions); the padding belongs in the consumer's own pads, where the kernel skips the
// zeros instead of a separate pass copying the whole tensor.
#include "compiler/graph/op_attrs.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::OpKind;

// The spatial (top, left, bottom, right) pads of a constant-zero Pad of NCHW data that pads
// nothing else and crops nothing; nothing for any other node.
std::optional<graph::Ints> spatial_zero_pads(const graph::Graph& g, const graph::Node& pad) {
  if (pad.op != OpKind::kPad || g.type(pad.inputs[0]).shape.size() != 4) return std::nullopt;
  const auto a = graph::attrs_as<graph::PadAttrs>(pad.attrs);
  if (a.mode != 0 || a.value != 0 || a.pads.size() != 8) return std::nullopt;
  const graph::Ints& p = a.pads;  // begins of N, C, H, W, then their ends
  if (p[0] || p[1] || p[4] || p[5]) return std::nullopt;
  for (int64_t v : p)
    if (v < 0) return std::nullopt;
  return graph::Ints{p[2], p[3], p[6], p[7]};
}

Expected<graph::Graph> run(const graph::Graph& g) {
  Rewriter rw(g);
  for (const graph::Node& n : g.nodes()) {
    const int producer = g.value(n.inputs[0]).producer;
    const bool candidate = n.op == OpKind::kConv2d || n.op == OpKind::kAvgPool2d;
    std::optional<graph::Ints> extra;
    if (candidate && producer >= 0) extra = spatial_zero_pads(g, g.nodes()[producer]);
    if (extra && n.op == OpKind::kAvgPool2d) {
      // The padded zeros are elements the pool counts: its own pads must count them too.
      const auto pool = graph::attrs_as<graph::Pool2dAttrs>(n.attrs);
      const bool own_pads = pool.pads != graph::Ints{0, 0, 0, 0};
      if (own_pads && !pool.count_include_pad) extra.reset();
    }
    if (!extra) {
      TT_RETURN_IF_ERROR(rw.copy(n));
      continue;
    }
    graph::Attrs attrs = n.attrs;
    graph::Ints pads = attrs.get_ints("pads", {0, 0, 0, 0});
    for (int i = 0; i < 4; ++i) pads[i] += (*extra)[i];
    attrs.set("pads", pads);
    if (n.op == OpKind::kAvgPool2d) attrs.set("count_include_pad", int64_t{1});
    std::vector<graph::ValueId> inputs = {rw.map(g.nodes()[producer].inputs[0])};
    for (size_t i = 1; i < n.inputs.size(); ++i) inputs.push_back(rw.map(n.inputs[i]));
    TT_ASSIGN_OR_RETURN(graph::ValueId y, rw.emit(n.op, n.name, std::move(inputs), attrs));
    rw.set(n.output, y);
  }
  return rw.finish();
}

}  // namespace

Pass fold_pad() {
  return Pass{"FoldPad",
              1,
              "a constant-zero spatial Pad in front of a conv2d or avg_pool2d becomes its pads "
              "(the Pad node stays for other readers; DeadCodeElimination drops it)",
              {},
              run};
}

}  // namespace tensortune::passes
