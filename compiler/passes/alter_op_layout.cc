// AlterOpLayout: conv2d to conv2d_nchwc and the blocked layout propagated as far as it goes,
// so that a layout_transform appears only where a consumer cannot take NCHW[x]c.
#include <map>

#include "compiler/graph/op_attrs.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "schedule_space/task.h"

namespace tensortune::passes {
namespace {

using graph::Attrs;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;
using graph::ValueId;

// With no choice given: the blocks of the default config of the template that runs the node,
// as AutoTVM falls back; plain (blocks of 1) when none runs it blocked.
ConvBlocks fallback_blocks(const schedule_space::Conv2dWorkload& w,
                           const schedule_space::Target& target) {
  const auto blocks = schedule_space::fallback_blocks(w, target);
  return blocks ? ConvBlocks{blocks->first, blocks->second} : ConvBlocks{1, 1};
}

std::string layout_name(int64_t block) {
  return block ? "NCHW" + std::to_string(block) + "c" : "NCHW";
}

// OIHW -> OIHW[ib]i[ob]o; for depthwise (I = 1) the result is O(1)HW(1)i[ob]o.
Tensor pack_weight(const Tensor& w, int64_t ib, int64_t ob) {
  const int64_t O = w.shape[0], I = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  Tensor out = Tensor::zeros(w.dtype, {O / ob, I / ib, KH, KW, ib, ob});
  const bool floats = graph::is_float(w.dtype);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i)
      for (int64_t k = 0; k < KH * KW; ++k) {
        const int64_t to =
            ((((o / ob) * (I / ib) + i / ib) * KH * KW + k) * ib + i % ib) * ob + o % ob;
        const int64_t from = (o * I + i) * KH * KW + k;
        if (floats)
          out.f32[to] = w.f32[from];
        else
          out.i64[to] = w.i64[from];
      }
  return out;
}

class LayoutAlterer {
 public:
  LayoutAlterer(const Graph& g, AlterOpLayoutOptions options)
      : g_(g), options_(std::move(options)), rw_(g) {}

  Expected<Graph> run() {
    for (const Node& n : g_.nodes()) TT_RETURN_IF_ERROR(visit(n));
    Graph out = rw_.finish();
    // Graph outputs leave in the layout the model declared.
    for (size_t i = 0; i < out.outputs().size(); ++i) {
      TT_ASSIGN_OR_RETURN(ValueId plain, to_block(out.outputs()[i], 0, &out));
      out.set_output(i, plain);
    }
    return out;
  }

 private:
  int64_t block_of(ValueId v) const {
    auto it = block_.find(v);
    return it == block_.end() ? 0 : it->second;
  }

  // The value in layout NCHW[target]c (0: NCHW), converting once per (value, layout).
  Expected<ValueId> to_block(ValueId v, int64_t target, Graph* graph = nullptr) {
    Graph& out = graph ? *graph : rw_.out();
    if (block_of(v) == target) return v;
    auto key = std::make_pair(v, target);
    if (auto it = transforms_.find(key); it != transforms_.end()) return it->second;
    TT_ASSIGN_OR_RETURN(
        ValueId t,
        out.add_node(OpKind::kLayoutTransform, out.value(v).name + "." + layout_name(target), {v},
                     graph::to_attrs(graph::LayoutTransformAttrs{block_of(v), target})));
    block_[t] = target;
    transforms_[key] = t;
    return t;
  }

  Status visit(const Node& n) {
    switch (n.op) {
      case OpKind::kConv2d:
        return visit_conv(n);
      case OpKind::kConv2dInteger:
        return visit_integer_conv(n);
      case OpKind::kCast: {
        // Element-wise: quantizing (float -> 8-bit) and dequantizing (int32 -> float) casts
        // stay in the blocked layout of the convolutions around them.
        const ValueId x = rw_.map(n.inputs[0]);
        const graph::DType from = g_.type(n.inputs[0]).dtype, to = g_.type(n.output).dtype;
        const bool quantizing = from == graph::DType::kFloat32 &&
                                (to == graph::DType::kUInt8 || to == graph::DType::kInt8);
        const bool dequantizing = from == graph::DType::kInt32 && to == graph::DType::kFloat32;
        if (block_of(x) == 0 || !(quantizing || dequantizing)) return copy_plain(n);
        TT_ASSIGN_OR_RETURN(ValueId y, rw_.emit(n.op, n.name, {x}, n.attrs));
        return keep(n, y, block_of(x));
      }
      case OpKind::kMaxPool2d:
      case OpKind::kAvgPool2d:
      case OpKind::kGlobalAvgPool2d: {
        const ValueId x = rw_.map(n.inputs[0]);
        const int64_t b = block_of(x);
        if (b == 0) return copy_plain(n);
        Attrs attrs = n.attrs;
        attrs.set("block", b);
        TT_ASSIGN_OR_RETURN(ValueId y, rw_.emit(n.op, n.name, {x}, attrs));
        return keep(n, y, b);
      }
      default:
        if (graph::is_unary_elementwise(n.op)) {
          const ValueId x = rw_.map(n.inputs[0]);
          TT_ASSIGN_OR_RETURN(ValueId y, rw_.emit(n.op, n.name, {x}, n.attrs));
          return keep(n, y, block_of(x));
        }
        if (graph::is_binary_elementwise(n.op)) return visit_binary(n);
        return copy_plain(n);
    }
  }

  Status keep(const Node& n, ValueId y, int64_t block) {
    block_[y] = block;
    rw_.set(n.output, y);
    return ok_status();
  }

  // Any operator that needs NCHW: its inputs go back to plain layout.
  Status copy_plain(const Node& n) {
    std::vector<ValueId> inputs;
    for (ValueId in : n.inputs) {
      TT_ASSIGN_OR_RETURN(ValueId plain, to_block(rw_.map(in), 0));
      inputs.push_back(plain);
    }
    TT_ASSIGN_OR_RETURN(ValueId y, rw_.emit(n.op, n.name, std::move(inputs), n.attrs));
    return keep(n, y, 0);
  }

  /// A depthwise conv without a record keeps its input's block (no transform in front of it);
  /// with a plain input, the widest power-of-two block up to the vector that divides the
  /// channels.
  ConvBlocks inherited_depthwise_blocks(int64_t in_block, int64_t channels) const {
    int64_t b = 1;
    if (in_block > 0 && channels % in_block == 0) {
      b = in_block;
    } else {
      for (int64_t c = options_.vector_lanes; c > 1; c /= 2)
        if (channels % c == 0) {
          b = c;
          break;
        }
    }
    return {b, b};
  }

  Status visit_conv(const Node& n) {
    const Shape& x = g_.type(n.inputs[0]).shape;
    const Shape& w = g_.type(n.inputs[1]).shape;
    const auto conv = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
    const int64_t groups = conv.groups;
    const bool depthwise = groups > 1 && groups == x[1] && w[0] == x[1] && w[1] == 1;
    if (!g_.is_constant(n.inputs[1]) || (groups != 1 && !depthwise)) return copy_plain(n);
    const ValueId data = rw_.map(n.inputs[0]);
    ConvBlocks blocks;
    auto workload = schedule_space::conv2d_workload(x, w, conv.strides, conv.pads, conv.dilations);
    if (!workload) return workload.error().with_context("node '" + n.name + "'");
    const auto for_node = options_.node_blocks ? options_.node_blocks(n.name) : std::nullopt;
    if (depthwise) {
      const auto chosen = for_node                    ? for_node
                          : options_.depthwise_blocks ? options_.depthwise_blocks(*workload)
                                                      : std::nullopt;
      blocks = chosen ? *chosen : inherited_depthwise_blocks(block_of(data), x[1]);
    } else {
      blocks = for_node                 ? *for_node
               : options_.choose_blocks ? options_.choose_blocks(*workload)
                                        : fallback_blocks(*workload, options_.target);
    }
    if (blocks.ic_bn < 1 || blocks.oc_bn < 1 || x[1] % blocks.ic_bn || w[0] % blocks.oc_bn)
      return invalid_argument(
          "node '" + n.name + "': block sizes ic_bn=" + std::to_string(blocks.ic_bn) +
          " oc_bn=" + std::to_string(blocks.oc_bn) + " do not divide channels " +
          std::to_string(x[1]) + " -> " + std::to_string(w[0]));
    return emit_blocked(n, data, blocks, depthwise ? 1 : blocks.ic_bn);
  }

  /// `n` as conv2d_nchwc in `blocks`: its data re-blocked, its constant weight packed in
  /// OIHW[weight_ib]i[oc_bn]o, its other inputs (an integer conv's zero point) as they are.
  Status emit_blocked(const Node& n, ValueId data, const ConvBlocks& blocks, int64_t weight_ib) {
    TT_ASSIGN_OR_RETURN(ValueId blocked, to_block(data, blocks.ic_bn));
    const ValueId weight =
        rw_.out().add_constant(g_.value(n.inputs[1]).name + ".OIHW" + std::to_string(blocks.ic_bn) +
                                   "i" + std::to_string(blocks.oc_bn) + "o",
                               pack_weight(*g_.constant(n.inputs[1]), weight_ib, blocks.oc_bn));
    std::vector<ValueId> inputs = {blocked, weight};
    for (size_t i = 2; i < n.inputs.size(); ++i) inputs.push_back(rw_.map(n.inputs[i]));
    graph::Conv2dNCHWcAttrs blocked_conv;
    static_cast<graph::Conv2dAttrs&>(blocked_conv) = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
    blocked_conv.ic_bn = blocks.ic_bn;
    blocked_conv.oc_bn = blocks.oc_bn;
    TT_ASSIGN_OR_RETURN(ValueId y, rw_.emit(OpKind::kConv2dNCHWc, n.name, std::move(inputs),
                                            graph::to_attrs(blocked_conv)));
    return keep(n, y, blocks.oc_bn);
  }

  /// conv2d_integer of uint8 data by constant int8 weights (groups 1), as a quantized network
  /// has it: conv2d_nchwc with integer operands, in the blocks its records (or the int8
  /// template's default) chose. Others stay as they are, in NCHW.
  Status visit_integer_conv(const Node& n) {
    const auto conv = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
    const Shape& x = g_.type(n.inputs[0]).shape;
    const Shape& w = g_.type(n.inputs[1]).shape;
    if (conv.groups != 1 || !g_.is_constant(n.inputs[1]) ||
        g_.type(n.inputs[0]).dtype != graph::DType::kUInt8 ||
        g_.type(n.inputs[1]).dtype != graph::DType::kInt8 || !options_.choose_blocks)
      return copy_plain(n);
    auto workload = schedule_space::conv2d_workload(x, w, conv.strides, conv.pads, conv.dilations);
    if (!workload) return workload.error().with_context("node '" + n.name + "'");
    workload->precision = integer_precision(g_, n.inputs[1]);
    const auto for_node = options_.node_blocks ? options_.node_blocks(n.name) : std::nullopt;
    const ConvBlocks blocks = for_node ? *for_node : options_.choose_blocks(*workload);
    if (blocks.ic_bn < 1 || blocks.oc_bn < 1 || x[1] % blocks.ic_bn || w[0] % blocks.oc_bn)
      return copy_plain(n);
    return emit_blocked(n, rw_.map(n.inputs[0]), blocks, blocks.ic_bn);
  }

  // Per-channel values of a constant that broadcasts along axis 1 of a rank-4 shape only.
  const Tensor* per_channel(ValueId old_constant, int64_t channels) const {
    const Tensor* t = g_.constant(old_constant);
    if (!t || t->shape.size() > 4) return nullptr;
    const size_t lead = 4 - t->shape.size();
    for (size_t i = 0; i < t->shape.size(); ++i)
      if (t->shape[i] != 1 && !(lead + i == 1 && t->shape[i] == channels)) return nullptr;
    return t;
  }

  Status visit_binary(const Node& n) {
    const Shape& out_shape = g_.type(n.output).shape;
    if (out_shape.size() != 4) return copy_plain(n);
    const ValueId a = rw_.map(n.inputs[0]), b = rw_.map(n.inputs[1]);
    const bool ca = g_.is_constant(n.inputs[0]), cb = g_.is_constant(n.inputs[1]);
    if (!ca && !cb) {
      if (g_.type(n.inputs[0]).shape != g_.type(n.inputs[1]).shape) return copy_plain(n);
      const int64_t target = block_of(a) ? block_of(a) : block_of(b);
      TT_ASSIGN_OR_RETURN(ValueId ta, to_block(a, target));
      TT_ASSIGN_OR_RETURN(ValueId tb, to_block(b, target));
      TT_ASSIGN_OR_RETURN(ValueId y, rw_.emit(n.op, n.name, {ta, tb}, n.attrs));
      return keep(n, y, target);
    }
    if (ca && cb) return copy_plain(n);
    const int data_index = ca ? 1 : 0;
    const ValueId data = data_index == 0 ? a : b;
    const int64_t block = block_of(data);
    const Tensor* c = per_channel(n.inputs[1 - data_index], out_shape[1]);
    if (block == 0 || !c || g_.type(n.inputs[data_index]).shape != out_shape) return copy_plain(n);
    Tensor blocked = *c;
    if (c->size() > 1) blocked.shape = {out_shape[1] / block, 1, 1, block};
    ValueId cv = rw_.out().add_constant(
        g_.value(n.inputs[1 - data_index]).name + "." + layout_name(block), std::move(blocked));
    std::vector<ValueId> inputs =
        data_index == 0 ? std::vector<ValueId>{data, cv} : std::vector<ValueId>{cv, data};
    TT_ASSIGN_OR_RETURN(ValueId y, rw_.emit(n.op, n.name, std::move(inputs), n.attrs));
    return keep(n, y, block);
  }

  const Graph& g_;
  AlterOpLayoutOptions options_;
  Rewriter rw_;
  std::map<ValueId, int64_t> block_;
  std::map<std::pair<ValueId, int64_t>, ValueId> transforms_;
};

}  // namespace

Pass alter_op_layout(AlterOpLayoutOptions options) {
  return Pass{"AlterOpLayout",
              3,
              "conv2d runs as conv2d_nchwc with packed weights; layout transforms appear only "
              "where a consumer needs another layout",
              {},
              [options](const Graph& g) { return LayoutAlterer(g, options).run(); }};
}

}  // namespace tensortune::passes
