// The epilogue vocabulary of network kernels (network_kernels.h) as graph patterns.
#include "compiler/passes/fusion_rules.h"

#include <algorithm>

#include "compiler/graph/op_attrs.h"
#include "schedule_space/template.h"

namespace tensortune::passes {
namespace {

using epilogue::EpilogueOp;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;
using graph::ValueId;

/// The axes of an anchor's output that index its channels, in order (the channel is
/// i[a0] * dim[a1] + i[a1] for two axes): NCHW[x]c keeps them in axes 1 and 4, a matmul's are
/// its columns (the last axis).
std::vector<int> channel_axes(const Graph& g, const Node& anchor) {
  if (anchor.op == OpKind::kConv2dNCHWc) return {1, 4};
  if (anchor.op == OpKind::kMatMul)
    return {static_cast<int>(g.type(anchor.output).shape.size()) - 1};
  return {1};
}

FusedOp fused(EpilogueOp::Kind kind, std::optional<Tensor> param = std::nullopt) {
  FusedOp f;
  f.op.kind = kind;
  f.param = std::move(param);
  return f;
}

/// `c` (broadcast to `out`, right-aligned) as one value per channel, of c's dtype (float32 or
/// int32), or nothing when it varies along another axis.
std::optional<Tensor> per_channel(const Tensor& c, Shape c_shape, const Shape& out,
                                  const std::vector<int>& axes) {
  if ((c.dtype != graph::DType::kFloat32 && c.dtype != graph::DType::kInt32) ||
      c_shape.size() > out.size())
    return std::nullopt;
  c_shape.insert(c_shape.begin(), out.size() - c_shape.size(), 1);
  for (size_t d = 0; d < out.size(); ++d) {
    const bool channel = std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end();
    if (c_shape[d] != 1 && (!channel || c_shape[d] != out[d])) return std::nullopt;
  }
  const auto strides = graph::strides_of(c_shape);
  int64_t channels = 1;
  for (int a : axes) channels *= out[a];
  Tensor values = Tensor::zeros(c.dtype, {channels});
  for (int64_t i = 0; i < channels; ++i) {
    int64_t rest = i, offset = 0;
    for (auto a = axes.rbegin(); a != axes.rend(); ++a) {
      const int64_t index = rest % out[*a];
      rest /= out[*a];
      if (c_shape[*a] != 1) offset += index * strides[*a];
    }
    if (c.dtype == graph::DType::kInt32)
      values.i64[static_cast<size_t>(i)] = c.i64[static_cast<size_t>(offset)];
    else
      values.f32[static_cast<size_t>(i)] = c.f32[static_cast<size_t>(offset)];
  }
  return values;
}

}  // namespace

bool is_elementwise(OpKind op) {
  return graph::is_unary_elementwise(op) || graph::is_binary_elementwise(op) ||
         op == OpKind::kBiasAdd;
}

bool is_float_node(const Graph& g, const Node& n) {
  if (g.type(n.output).dtype != graph::DType::kFloat32) return false;
  for (ValueId in : n.inputs)
    if (g.type(in).dtype != graph::DType::kFloat32) return false;
  return true;
}

bool all_float(const Graph& g, const std::vector<int>& nodes) {
  return std::all_of(nodes.begin(), nodes.end(),
                     [&](int i) { return is_float_node(g, g.nodes()[i]); });
}

bool is_quantizing_cast(const Graph& g, const Node& n) {
  if (n.op != OpKind::kCast || g.type(n.inputs[0]).dtype != graph::DType::kFloat32) return false;
  const graph::DType to = g.type(n.output).dtype;
  return to == graph::DType::kUInt8 || to == graph::DType::kInt8;
}

std::optional<std::pair<double, double>> known_range(const Graph& g, ValueId v) {
  const int p = g.value(v).producer;
  if (p < 0) return std::nullopt;
  const Node& n = g.nodes()[static_cast<size_t>(p)];
  if (n.op == OpKind::kClip) {
    const auto clip = graph::attrs_as<graph::ClipAttrs>(n.attrs);
    return std::pair{clip.min, clip.max};
  }
  // x + c by a scalar constant (an int8 value moved into uint8's range).
  if (n.op == OpKind::kAdd && n.inputs.size() == 2)
    for (int k = 0; k < 2; ++k) {
      const ValueId c = n.inputs[static_cast<size_t>(k)];
      if (!g.is_constant(c) || g.constant(c)->size() != 1) continue;
      auto r = known_range(g, n.inputs[static_cast<size_t>(1 - k)]);
      if (!r) return std::nullopt;
      const double shift = g.constant(c)->at(0);
      return std::pair{r->first + shift, r->second + shift};
    }
  return std::nullopt;
}

schedule_space::Precision integer_precision(const Graph& g, graph::ValueId weight) {
  const graph::Tensor* w = g.constant(weight);
  if (!w || w->i64.empty()) return schedule_space::Precision::kUInt8Int8;
  const auto [lo, hi] = std::minmax_element(w->i64.begin(), w->i64.end());
  return schedule_space::quantized_precision_for(*lo, *hi);
}

namespace {

// The graph's quantized form of an anchor: uint8 data, int8 weights (storage; the values may
// lie in a narrower range, which the precision says) and, when present, a constant data zero
// point, which the kernels fold at compile time. Whether a kernel computes the node is the
// registry's answer (has_template_for), not this file's.
bool has_quantized_operands(const Graph& g, const Node& n) {
  return n.inputs.size() >= 2 && g.type(n.inputs[0]).dtype == graph::DType::kUInt8 &&
         g.type(n.inputs[1]).dtype == graph::DType::kInt8 &&
         (n.inputs.size() < 3 || g.is_constant(n.inputs[2]));
}

// The anchor's shape and workload, float32 (conv_anchor sets a quantized node's precision).
std::optional<ConvAnchor> conv_anchor_shape(const Graph& g, const Node& n) {
  const auto attrs = graph::attrs_as<graph::Conv2dNCHWcAttrs>(n.attrs);
  const int64_t groups = attrs.groups;
  const Shape& x = g.type(n.inputs[0]).shape;
  const Shape& k = g.type(n.inputs[1]).shape;
  const graph::Ints &s = attrs.strides, &p = attrs.pads, &d = attrs.dilations;
  ConvAnchor a;
  if (n.op == OpKind::kConv2d) {
    if (x.size() != 4 || k.size() != 4) return std::nullopt;
    a.workload = {x[0], x[1], x[2], x[3], k[0], k[2], k[3], s[0],
                  s[1], p[0], p[1], p[2], p[3], d[0], d[1]};
    // Depthwise with one output per input channel; other grouped convolutions have no kernel.
    a.depthwise = groups != 1 && groups == x[1] && k[0] == x[1] && k[1] == 1;
    a.workload.groups = groups;
  } else {
    if (x.size() != 5 || k.size() != 6) return std::nullopt;
    a.ic_bn = x[4];  // shape inference checked that they are the attributes' blocks
    a.oc_bn = k[5];
    a.workload = {x[0], x[1] * x[4], x[2], x[3], k[0] * k[5], k[2], k[3], s[0],
                  s[1], p[0],        p[1], p[2], p[3],        d[0], d[1]};
    a.depthwise = groups != 1 && groups == a.workload.in_channels &&
                  a.workload.out_channels == a.workload.in_channels && k[1] == 1 && k[4] == 1;
    a.workload.groups = groups;
  }
  if (groups != 1 && !a.depthwise) return std::nullopt;
  return a;
}

// Whether a template computes the quantized workload: asked at int8 weights, which every
// quantized template takes (a narrower range is a faster form of it), so that the question does
// not read the weights.
template <typename W>
bool computes_quantized(W w) {
  w.precision = schedule_space::Precision::kUInt8Int8;
  return schedule_space::has_template_for(w);
}

}  // namespace

bool is_integer_conv(const Graph& g, const Node& n) {
  if (n.op != OpKind::kConv2dNCHWc || !has_quantized_operands(g, n)) return false;
  const auto a = conv_anchor_shape(g, n);
  return a && computes_quantized(a->workload);
}

bool is_integer_dense(const Graph& g, const Node& n) {
  if (n.op != OpKind::kDense || !has_quantized_operands(g, n)) return false;
  const Shape& x = g.type(n.inputs[0]).shape;
  const Shape& k = g.type(n.inputs[1]).shape;
  return x.size() == 2 && k.size() == 2 &&
         computes_quantized(schedule_space::DenseWorkload{x[0], k[0], x[1]});
}

std::optional<ConvAnchor> conv_anchor(const Graph& g, const Node& n) {
  if (n.op != OpKind::kConv2d && n.op != OpKind::kConv2dNCHWc) return std::nullopt;
  if (graph::is_float(g.type(n.inputs[0]).dtype)) return conv_anchor_shape(g, n);
  if (!is_integer_conv(g, n)) return std::nullopt;
  auto a = conv_anchor_shape(g, n);
  a->workload.precision = integer_precision(g, n.inputs[1]);
  return a;
}

std::optional<schedule_space::BatchMatmulWorkload> batch_matmul_anchor(const Graph& g,
                                                                       const Node& n) {
  if (n.op != OpKind::kMatMul || n.inputs.size() != 2 || !is_float_node(g, n)) return std::nullopt;
  const Shape& a = g.type(n.inputs[0]).shape;
  const Shape& b = g.type(n.inputs[1]).shape;
  // The same batch axes on both sides (no broadcast): the batches are contiguous, folded into one.
  if (a.size() < 2 || a.size() != b.size() || !std::equal(a.begin(), a.end() - 2, b.begin()))
    return std::nullopt;
  const int64_t batch = graph::num_elements(Shape(a.begin(), a.end() - 2));
  auto w = schedule_space::batch_matmul_workload({batch, a[a.size() - 2], a.back()},
                                                 {batch, b[b.size() - 2], b.back()}, false);
  if (!w || !schedule_space::has_template_for(*w)) return std::nullopt;
  return *w;
}

std::optional<schedule_space::AttentionWorkload> attention_workload(const Shape& q, const Shape& k,
                                                                    const Shape& v,
                                                                    const Shape* mask,
                                                                    double scale) {
  const size_t rank = q.size();
  if (rank < 2 || k.size() != rank || v.size() != rank) return std::nullopt;
  schedule_space::AttentionWorkload w;
  w.batch = graph::num_elements(Shape(q.begin(), q.end() - 2));
  w.m = q[rank - 2];
  w.k = q[rank - 1];
  w.n = k[rank - 1];
  w.dv = v[rank - 1];
  w.scale = scale;
  if (mask) {
    // Right-aligned against the scores [..., M, N]: the keys whole, the rows whole or broadcast,
    // then batch axes whole up to the first that broadcasts, and broadcast from there on.
    Shape m(rank - std::min(rank, mask->size()), 1);
    m.insert(m.end(), mask->end() - std::min(rank, mask->size()), mask->end());
    if (mask->size() > rank || m[rank - 1] != w.n || (m[rank - 2] != 1 && m[rank - 2] != w.m))
      return std::nullopt;
    w.mask_rows = m[rank - 2];
    w.mask_batch = 1;
    bool broadcasting = false;
    for (size_t d = 0; d + 2 < rank; ++d) {
      if (m[d] == q[d] && !broadcasting) {
        w.mask_batch *= m[d];
      } else if (m[d] == 1) {
        broadcasting = true;
      } else {
        return std::nullopt;
      }
    }
  }
  if (!schedule_space::validate(w) || !schedule_space::has_template_for(w)) return std::nullopt;
  return w;
}

std::optional<schedule_space::AttentionWorkload> attention_anchor(const Graph& g, const Node& n) {
  if (n.op != OpKind::kAttention || n.inputs.size() < 3 || !is_float_node(g, n))
    return std::nullopt;
  const Shape* mask = n.inputs.size() > 3 ? &g.type(n.inputs[3]).shape : nullptr;
  return attention_workload(g.type(n.inputs[0]).shape, g.type(n.inputs[1]).shape,
                            g.type(n.inputs[2]).shape, mask,
                            graph::attrs_as<graph::AttentionAttrs>(n.attrs).scale);
}

bool is_kernel_anchor(const Graph& g, const Node& n) {
  if (is_integer_conv(g, n) || is_integer_dense(g, n)) return g.is_constant(n.inputs[1]);
  if (batch_matmul_anchor(g, n) || attention_anchor(g, n)) return true;
  return (n.op == OpKind::kDense || conv_anchor(g, n)) && is_float_node(g, n);
}

std::optional<DequantizedBytes> dequantized_bytes(const Graph& g, ValueId v) {
  // The node computing `value` where it is an `op` of `value`'s producer's inputs and a
  // scalar float constant, read by nothing else; its other input in *in, the constant in *c.
  auto scalar_step = [&](ValueId value, OpKind op, ValueId* in, float* c) -> int {
    const int p = g.value(value).producer;
    if (p < 0) return -1;
    const Node& n = g.nodes()[static_cast<size_t>(p)];
    if (n.op != op || n.inputs.size() != 2 || !g.is_constant(n.inputs[1])) return -1;
    const Tensor& t = *g.constant(n.inputs[1]);
    if (t.dtype != graph::DType::kFloat32 || t.size() != 1) return -1;
    *in = n.inputs[0];
    *c = static_cast<float>(t.at(0));
    return p;
  };
  DequantizedBytes d;
  ValueId x;
  const int multiply = scalar_step(v, OpKind::kMultiply, &x, &d.scale);
  if (multiply < 0) return std::nullopt;
  ValueId widened = x;
  const int subtract = scalar_step(x, OpKind::kSubtract, &widened, &d.zero_point);
  const int cast = g.value(widened).producer;
  if (cast < 0) return std::nullopt;
  const auto uses = g.use_counts();  // after the cheap checks: this one reads the whole graph
  if (uses[static_cast<size_t>(x)] != 1 || uses[static_cast<size_t>(widened)] != 1)
    return std::nullopt;
  const Node& c = g.nodes()[static_cast<size_t>(cast)];
  if (c.op != OpKind::kCast || g.type(c.inputs[0]).dtype != graph::DType::kUInt8 ||
      g.type(widened).dtype != graph::DType::kFloat32 ||
      g.type(c.inputs[0]).shape != g.type(v).shape)
    return std::nullopt;
  d.bytes = c.inputs[0];
  d.nodes = {cast};
  if (subtract >= 0) d.nodes.push_back(subtract);
  d.nodes.push_back(multiply);
  return d;
}

std::optional<FusedOp> fuse_epilogue_node(const Graph& g, const Node& anchor, const Node& n,
                                          ValueId v) {
  const Shape& out = g.type(anchor.output).shape;
  if (g.type(n.output).shape != out) return std::nullopt;
  // The quantizing cast of a value clipped to the byte's range: the kernel stores the bytes the
  // next int8 kernel reads (the conversion needs no saturation there, as in the element-wise
  // kernel).
  if (is_quantizing_cast(g, n)) {
    const bool to_uint8 = g.type(n.output).dtype == graph::DType::kUInt8;
    const auto range = known_range(g, v);
    if (!range || range->first < (to_uint8 ? 0.0 : -128.0) ||
        range->second > (to_uint8 ? 255.0 : 127.0))
      return std::nullopt;
    return fused(to_uint8 ? EpilogueOp::Kind::kToUInt8 : EpilogueOp::Kind::kToInt8);
  }
  // An integer kernel's int32 result plus an int32 constant per channel (QLinearConv's bias),
  // while the value is still an integer.
  if (g.type(v).dtype == graph::DType::kInt32 && g.type(n.output).dtype == graph::DType::kInt32) {
    if (n.op != OpKind::kAdd || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1])
      return std::nullopt;
    const ValueId other = n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
    const Tensor* c = g.constant(other);
    if (!c || c->dtype != graph::DType::kInt32) return std::nullopt;
    auto p = per_channel(*c, c->shape, out, channel_axes(g, anchor));
    if (!p) return std::nullopt;
    return fused(EpilogueOp::Kind::kAddChannel, std::move(p));
  }
  if (g.type(n.output).dtype != graph::DType::kFloat32) return std::nullopt;
  // An integer kernel's int32 result: converted to float first, then the float steps.
  if (g.type(v).dtype != graph::DType::kFloat32) {
    if (n.op != OpKind::kCast || g.type(v).dtype != graph::DType::kInt32) return std::nullopt;
    return fused(EpilogueOp::Kind::kToFloat);
  }
  const auto axes = channel_axes(g, anchor);
  if (n.op == OpKind::kRelu) return fused(EpilogueOp::Kind::kRelu);
  if (n.op == OpKind::kGelu)
    return fused(graph::attrs_as<graph::GeluAttrs>(n.attrs).tanh ? EpilogueOp::Kind::kGeluTanh
                                                                 : EpilogueOp::Kind::kGelu);
  if (n.op == OpKind::kRound) return fused(EpilogueOp::Kind::kRound);
  // x / c by a per-channel constant (a QuantizeLinear's scale).
  if (n.op == OpKind::kDivide) {
    if (n.inputs[0] != v || n.inputs[1] == v || !g.is_constant(n.inputs[1])) return std::nullopt;
    const Tensor& c = *g.constant(n.inputs[1]);
    auto p = per_channel(c, c.shape, out, axes);
    if (!p) return std::nullopt;
    return fused(EpilogueOp::Kind::kDivChannel, std::move(p));
  }
  if (n.op == OpKind::kClip) {
    FusedOp f = fused(EpilogueOp::Kind::kClip);
    const auto clip = graph::attrs_as<graph::ClipAttrs>(n.attrs);
    f.op.lo = static_cast<float>(clip.min);
    f.op.hi = static_cast<float>(clip.max);
    return f;
  }
  if (n.op == OpKind::kBiasAdd) {
    if (n.inputs[0] != v || !g.is_constant(n.inputs[1])) return std::nullopt;
    const int64_t axis = graph::attrs_as<graph::BiasAddAttrs>(n.attrs).axis;
    const int64_t rank = static_cast<int64_t>(out.size());
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) return std::nullopt;
    Shape shape(out.size(), 1);
    shape[static_cast<size_t>(a)] = out[static_cast<size_t>(a)];
    auto p = per_channel(*g.constant(n.inputs[1]), shape, out, axes);
    if (!p) return std::nullopt;
    return fused(EpilogueOp::Kind::kAddChannel, std::move(p));
  }
  const bool add = n.op == OpKind::kAdd, mul = n.op == OpKind::kMultiply,
             sub = n.op == OpKind::kSubtract;
  if (!add && !mul && !sub) return std::nullopt;
  if (n.inputs.size() != 2 || (n.inputs[0] == v) == (n.inputs[1] == v)) return std::nullopt;
  const ValueId other = n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
  if (sub && n.inputs[0] != v) return std::nullopt;  // c - x is not an epilogue we have
  if (g.type(other).dtype != graph::DType::kFloat32) return std::nullopt;
  if (g.is_constant(other)) {
    const Tensor& c = *g.constant(other);
    if (auto p = per_channel(c, c.shape, out, axes)) {
      if (sub)
        for (float& x : p->f32) x = -x;
      return fused(mul ? EpilogueOp::Kind::kMulChannel : EpilogueOp::Kind::kAddChannel,
                   std::move(p));
    }
  }
  if (sub || g.type(other).shape != out) return std::nullopt;
  if (add) {
    // Whether the bytes exist when the kernel runs is FuseOps' to say (it absorbs the chain).
    if (const auto d = dequantized_bytes(g, other)) {
      FusedOp f = fused(EpilogueOp::Kind::kAddDequantized);
      f.op.zero_point = d->zero_point;
      f.op.scale = d->scale;
      f.value = d->bytes;
      return f;
    }
  }
  FusedOp f = fused(mul ? EpilogueOp::Kind::kMulTensor : EpilogueOp::Kind::kAddTensor);
  f.value = other;
  return f;
}

}  // namespace tensortune::passes
