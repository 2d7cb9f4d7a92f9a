// Implements lower_network (compile.h): fusion groups to steps and kernel specs.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "compiler/backend/compile.h"
#include "schedule_space/dense_template.h"

namespace tensortune::backend {
namespace {

namespace ss = schedule_space;
using compiler::ConvKernelSpec;
using compiler::DenseKernelSpec;
using compiler::ElementwiseInstr;
using compiler::ElementwiseKernelSpec;
using compiler::EpilogueOp;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;
using graph::ValueId;

/// Where an anchor's output keeps its channels: the axes that index them, in order (the
/// channel is i[a0] * dim[a1] + i[a1] for two axes).
struct ChannelAxes {
  std::vector<int> axes;
};

/// The operand of an epilogue op and what it needs: a per-channel parameter, or a value read
/// in the output's layout.
struct FusedOp {
  EpilogueOp op;
  std::optional<Tensor> param;      ///< channel ops
  ValueId value = graph::kNoValue;  ///< tensor ops
};

FusedOp fused(EpilogueOp::Kind kind, std::optional<Tensor> param = std::nullopt) {
  FusedOp f;
  f.op.kind = kind;
  f.param = std::move(param);
  return f;
}

/// `c` (broadcast to `out`, right-aligned) as one float per channel, or nothing when it varies
/// along another axis.
std::optional<Tensor> per_channel(const Tensor& c, Shape c_shape, const Shape& out,
                                  const ChannelAxes& ch) {
  if (c.dtype != graph::DType::kFloat32 || c_shape.size() > out.size()) return std::nullopt;
  c_shape.insert(c_shape.begin(), out.size() - c_shape.size(), 1);
  for (size_t d = 0; d < out.size(); ++d) {
    const bool channel =
        std::find(ch.axes.begin(), ch.axes.end(), static_cast<int>(d)) != ch.axes.end();
    if (c_shape[d] != 1 && (!channel || c_shape[d] != out[d])) return std::nullopt;
  }
  const auto strides = graph::strides_of(c_shape);
  int64_t channels = 1;
  for (int a : ch.axes) channels *= out[a];
  std::vector<float> values(static_cast<size_t>(channels));
  for (int64_t i = 0; i < channels; ++i) {
    int64_t rest = i, offset = 0;
    for (auto a = ch.axes.rbegin(); a != ch.axes.rend(); ++a) {
      const int64_t index = rest % out[*a];
      rest /= out[*a];
      if (c_shape[*a] != 1) offset += index * strides[*a];
    }
    values[static_cast<size_t>(i)] = c.f32[static_cast<size_t>(offset)];
  }
  return Tensor::from_floats({channels}, std::move(values));
}

/// The epilogue node `n` applied to the chain value `v` of shape `out`, if a kernel can fuse it.
std::optional<FusedOp> fuse_epilogue_node(const Graph& g, const Node& n, ValueId v,
                                          const Shape& out, const ChannelAxes& ch) {
  if (n.op == OpKind::kRelu) return fused(EpilogueOp::Kind::kRelu);
  if (n.op == OpKind::kClip) {
    FusedOp f = fused(EpilogueOp::Kind::kClip);
    f.op.lo =
        static_cast<float>(n.attrs.get_float("min", -std::numeric_limits<double>::infinity()));
    f.op.hi = static_cast<float>(n.attrs.get_float("max", std::numeric_limits<double>::infinity()));
    return f;
  }
  if (n.op == OpKind::kBiasAdd) {
    if (n.inputs[0] != v || !g.is_constant(n.inputs[1])) return std::nullopt;
    const int64_t axis = n.attrs.get_int("axis", 1);
    const int64_t rank = static_cast<int64_t>(out.size());
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) return std::nullopt;
    Shape shape(out.size(), 1);
    shape[static_cast<size_t>(a)] = out[static_cast<size_t>(a)];
    auto p = per_channel(*g.constant(n.inputs[1]), shape, out, ch);
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
    if (auto p = per_channel(c, c.shape, out, ch)) {
      if (sub)
        for (float& x : p->f32) x = -x;
      return fused(mul ? EpilogueOp::Kind::kMulChannel : EpilogueOp::Kind::kAddChannel,
                   std::move(p));
    }
  }
  if (sub || g.type(other).shape != out) return std::nullopt;
  FusedOp f = fused(mul ? EpilogueOp::Kind::kMulTensor : EpilogueOp::Kind::kAddTensor);
  f.value = other;
  return f;
}

/// The longest prefix of `chain` (the anchor's epilogue nodes) that the kernel fuses.
std::vector<FusedOp> fuse_epilogue(const Graph& g, const std::vector<int>& chain,
                                   ValueId anchor_out, const ChannelAxes& ch) {
  std::vector<FusedOp> ops;
  const Shape& out = g.type(anchor_out).shape;
  ValueId v = anchor_out;
  for (int i : chain) {
    auto f = fuse_epilogue_node(g, g.nodes()[i], v, out, ch);
    if (!f) break;
    ops.push_back(std::move(*f));
    v = g.nodes()[i].output;
  }
  return ops;
}

bool is_elementwise(OpKind op) {
  return graph::is_unary_elementwise(op) || graph::is_binary_elementwise(op) ||
         op == OpKind::kBiasAdd;
}

bool is_native(OpKind op) {
  switch (op) {
    case OpKind::kLayoutTransform:
    case OpKind::kGlobalAvgPool2d:
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return true;
    default:
      return false;
  }
}

bool all_float(const Graph& g, const std::vector<int>& nodes) {
  for (int i : nodes) {
    const Node& n = g.nodes()[i];
    if (g.type(n.output).dtype != graph::DType::kFloat32) return false;
    for (ValueId in : n.inputs)
      if (g.type(in).dtype != graph::DType::kFloat32) return false;
  }
  return true;
}

/// A conv2d (groups 1) or conv2d_nchwc (groups 1) node as a workload and its data/output
/// blocks; nothing for grouped or depthwise convolutions.
struct ConvAnchor {
  ss::Conv2dWorkload w;
  int64_t ic_bn = 1, oc_bn = 1;
  bool depthwise = false;
};

std::optional<ConvAnchor> conv_anchor(const Graph& g, const Node& n) {
  if (n.op != OpKind::kConv2d && n.op != OpKind::kConv2dNCHWc) return std::nullopt;
  const int64_t groups = n.attrs.get_int("groups", 1);
  const Shape& x = g.type(n.inputs[0]).shape;
  const Shape& k = g.type(n.inputs[1]).shape;
  const auto s = n.attrs.get_ints("strides", {1, 1});
  const auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto d = n.attrs.get_ints("dilations", {1, 1});
  ConvAnchor a;
  if (n.op == OpKind::kConv2d) {
    if (x.size() != 4 || k.size() != 4) return std::nullopt;
    a.w = {x[0], x[1], x[2], x[3], k[0], k[2], k[3], s[0],
           s[1], p[0], p[1], p[2], p[3], d[0], d[1]};
    // Depthwise with one output per input channel; other grouped convolutions have no kernel.
    a.depthwise = groups != 1 && groups == x[1] && k[0] == x[1] && k[1] == 1;
  } else {
    if (x.size() != 5 || k.size() != 6) return std::nullopt;
    a.ic_bn = n.attrs.get_int("ic_bn", x[4]);
    a.oc_bn = n.attrs.get_int("oc_bn", k[5]);
    a.w = {x[0], x[1] * x[4], x[2], x[3], k[0] * k[5], k[2], k[3], s[0],
           s[1], p[0],        p[1], p[2], p[3],        d[0], d[1]};
    a.depthwise = groups != 1 && groups == a.w.in_channels && a.w.out_channels == a.w.in_channels &&
                  k[1] == 1 && k[4] == 1 && a.ic_bn == a.oc_bn;
  }
  if (groups != 1 && !a.depthwise) return std::nullopt;
  return a;
}

/// A schedule for blocks the records did not choose (NCHW convolutions run with blocks of 1):
/// the widest register row that fits, one row.
ss::Conv2dSchedule schedule_for_blocks(const ss::Conv2dWorkload& w, int64_t ic_bn, int64_t oc_bn,
                                       int lanes, int64_t widest = 31) {
  ss::Conv2dSchedule s;
  s.ic_bn = ic_bn;
  s.oc_bn = oc_bn;
  const int64_t vectors = (oc_bn + lanes - 1) / lanes;
  for (int64_t n = std::min<int64_t>(w.out_width(), widest); n >= 1; --n)
    if (w.out_width() % n == 0 && n * vectors <= ss::kMaxAccumulators) {
      s.reg_n = n;
      break;
    }
  return s;
}

std::string op_label(const Graph& g, const std::vector<int>& nodes) {
  std::string label;
  for (int i : nodes) {
    if (!label.empty()) label.push_back('+');
    const Node& n = g.nodes()[i];
    label.append(graph::op_name(n.op));
    if (n.op == OpKind::kLayoutTransform) {  // "layout_transform(8c->16c)": which blocks meet here
      auto append_block = [&](int64_t b) {
        if (b == 0) {
          label.append("NCHW");
          return;
        }
        label.append(std::to_string(b));
        label.push_back('c');
      };
      label.push_back('(');
      append_block(n.attrs.get_int("from_block", 0));
      label.append("->");
      append_block(n.attrs.get_int("to_block", 0));
      label.push_back(')');
    }
  }
  return label;
}

class Lowerer {
 public:
  Lowerer(Graph g, const ScheduleFn& conv_schedule, int lanes)
      : conv_schedule_(conv_schedule), lanes_(lanes) {
    out_.graph = std::move(g);
  }

  Expected<LoweredNetwork> run() {
    split_unfusable_epilogues();
    for (const auto& group : groups()) {
      TT_RETURN_IF_ERROR(lower_group(group));
    }
    return std::move(out_);
  }

 private:
  const Graph& g() const { return out_.graph; }

  /// Node indices of each fusion group, groups in order of their first node.
  std::vector<std::vector<int>> groups() const {
    std::map<int, size_t> index;
    std::vector<std::vector<int>> result;
    const auto& nodes = g().nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int group =
          nodes[i].fusion_group >= 0 ? nodes[i].fusion_group : -1 - static_cast<int>(i);
      auto [it, inserted] = index.emplace(group, result.size());
      if (inserted) result.emplace_back();
      result[it->second].push_back(static_cast<int>(i));
    }
    return result;
  }

  ChannelAxes channel_axes(const Node& anchor) const {
    if (anchor.op == OpKind::kConv2dNCHWc) return {{1, 4}};
    return {{1}};
  }

  bool is_kernel_anchor(const Node& n) const {
    if (n.op == OpKind::kDense) return true;
    return conv_anchor(g(), n).has_value();
  }

  /// Epilogue nodes a kernel cannot fuse move to a group of their own (an element-wise chain).
  void split_unfusable_epilogues() {
    int next = 0;
    for (const auto& n : g().nodes()) next = std::max(next, n.fusion_group + 1);
    for (const auto& group : groups()) {
      const Node& head = g().nodes()[group[0]];
      if (group.size() < 2 || !is_kernel_anchor(head) || !all_float(g(), group)) continue;
      const std::vector<int> chain(group.begin() + 1, group.end());
      const size_t fused = fuse_epilogue(g(), chain, head.output, channel_axes(head)).size();
      if (fused == chain.size()) continue;
      for (size_t i = fused; i < chain.size(); ++i)
        out_.graph.mutable_nodes()[chain[i]].fusion_group = next;
      ++next;
    }
  }

  ArgRef param(Tensor t) {
    out_.params.push_back(std::move(t));
    return {ArgRef::Kind::kParam, static_cast<int>(out_.params.size() - 1)};
  }

  static ArgRef value(ValueId v) { return {ArgRef::Kind::kValue, v}; }

  std::string kernel_symbol(compiler::NetworkKernelSpec spec) {
    const std::string key = compiler::spec_key(spec);
    auto it = symbols_.find(key);
    if (it != symbols_.end()) return it->second;
    std::string symbol = "tt_kernel_" + std::to_string(out_.kernels.size());
    out_.kernels.push_back({symbol, std::move(spec)});
    symbols_.emplace(key, symbol);
    return symbol;
  }

  /// Appends the fused epilogue's ops and operands to the step and the spec.
  std::vector<EpilogueOp> epilogue(Step& step, const std::vector<int>& group, const Node& head) {
    const std::vector<int> chain(group.begin() + 1, group.end());
    std::vector<EpilogueOp> ops;
    int operand = 0;
    for (FusedOp& f : fuse_epilogue(g(), chain, head.output, channel_axes(head))) {
      if (f.op.kind != EpilogueOp::Kind::kRelu && f.op.kind != EpilogueOp::Kind::kClip) {
        f.op.operand = operand++;
        step.args.push_back(f.param ? param(std::move(*f.param)) : value(f.value));
      }
      ops.push_back(f.op);
    }
    return ops;
  }

  Status lower_group(const std::vector<int>& group) {
    const Node& head = g().nodes()[group[0]];
    Step step;
    step.nodes = group;
    step.output = g().nodes()[group.back()].output;
    step.label = op_label(g(), group);
    const bool floats = all_float(g(), group);
    if (floats && conv_anchor(g(), head)) {
      lower_conv(step, group, head);
    } else if (floats && head.op == OpKind::kDense) {
      lower_dense(step, group, head);
    } else if (floats && std::all_of(group.begin(), group.end(),
                                     [&](int i) { return is_elementwise(g().nodes()[i].op); })) {
      lower_elementwise(step, group);
    } else if (floats && group.size() == 1 && head.op == OpKind::kMaxPool2d) {
      lower_max_pool(step, head);
    } else if (floats && group.size() == 1 && is_native(head.op)) {
      step.kind = Step::Kind::kNative;
    } else {
      step.kind = Step::Kind::kInterpret;
    }
    out_.steps.push_back(std::move(step));
    return Status{};
  }

  void lower_conv(Step& step, const std::vector<int>& group, const Node& head) {
    const ConvAnchor a = *conv_anchor(g(), head);
    ss::Conv2dSchedule s;
    if (a.depthwise) {
      s = schedule_for_blocks(a.w, a.oc_bn, a.oc_bn, lanes_, 8);
    } else if (head.op == OpKind::kConv2d) {
      s = schedule_for_blocks(a.w, 1, 1, lanes_);
    } else {
      s = conv_schedule_(a.w);
      if (s.ic_bn != a.ic_bn || s.oc_bn != a.oc_bn)
        s = schedule_for_blocks(a.w, a.ic_bn, a.oc_bn, lanes_);
    }
    step.kind = Step::Kind::kKernel;
    step.args = {value(head.inputs[0]), value(head.inputs[1]), value(step.output)};
    ConvKernelSpec spec{a.w, s, epilogue(step, group, head), a.depthwise};
    step.extent = compiler::parallel_extent(spec);
    step.flop = a.depthwise ? a.w.flop() / double(a.w.in_channels) : a.w.flop();
    step.symbol = kernel_symbol(std::move(spec));
  }

  void lower_dense(Step& step, const std::vector<int>& group, const Node& head) {
    const Shape& x = g().type(head.inputs[0]).shape;
    const Shape& k = g().type(head.inputs[1]).shape;
    const ss::DenseWorkload w{x[0], k[0], x[1]};
    const bool packed = g().is_constant(head.inputs[1]);
    const auto space = ss::dense_space(w, packed, lanes_);
    const auto s = ss::dense_schedule(space, ss::dense_default(space, w, packed, lanes_), packed);
    step.kind = Step::Kind::kKernel;
    step.args = {value(head.inputs[0]), value(head.inputs[1]), value(step.output)};
    if (packed) {  // [N, K] -> [N / bn, K, bn], once, at compile time
      const Tensor& nk = *g().constant(head.inputs[1]);
      const int64_t N = w.out_features, K = w.in_features, bn = s.xi;
      std::vector<float> p(static_cast<size_t>(N * K));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t kk = 0; kk < K; ++kk)
          p[static_cast<size_t>(((n / bn) * K + kk) * bn + n % bn)] =
              nk.f32[static_cast<size_t>(n * K + kk)];
      step.args[1] = param(Tensor::from_floats({N / bn, K, bn}, std::move(p)));
    }
    DenseKernelSpec spec{w, s, epilogue(step, group, head)};
    step.extent = compiler::parallel_extent(spec);
    step.flop = w.flop();
    step.symbol = kernel_symbol(std::move(spec));
  }

  void lower_max_pool(Step& step, const Node& n) {
    compiler::MaxPoolKernelSpec spec;
    spec.in_shape = g().type(n.inputs[0]).shape;
    if (spec.in_shape.size() == 4) spec.in_shape.push_back(1);  // NCHW as NCHW[1]c
    const Shape& out = g().type(n.output).shape;
    spec.out_h = out[2];
    spec.out_w = out[3];
    const auto k = n.attrs.get_ints("kernel"), s = n.attrs.get_ints("strides", {1, 1});
    const auto p = n.attrs.get_ints("pads", {0, 0, 0, 0}),
               d = n.attrs.get_ints("dilations", {1, 1});
    spec.kernel_h = k[0];
    spec.kernel_w = k[1];
    spec.stride_h = s[0];
    spec.stride_w = s[1];
    spec.pad_top = p[0];
    spec.pad_left = p[1];
    spec.dilation_h = d[0];
    spec.dilation_w = d[1];
    step.kind = Step::Kind::kKernel;
    step.args = {value(step.output), value(n.inputs[0])};
    step.extent = compiler::parallel_extent(spec);
    step.symbol = kernel_symbol(std::move(spec));
  }

  void lower_elementwise(Step& step, const std::vector<int>& group) {
    ElementwiseKernelSpec spec;
    spec.out_shape = g().type(step.output).shape;
    step.kind = Step::Kind::kKernel;
    step.args = {value(step.output)};
    std::map<ValueId, int> result_of;   // a value computed by an earlier instruction
    std::map<ValueId, int> operand_of;  // a value read from memory
    auto ref = [&](ValueId v, Shape shape) {
      if (auto it = result_of.find(v); it != result_of.end()) return -1 - it->second;
      if (auto it = operand_of.find(v); it != operand_of.end()) return it->second;
      // Broadcast strides against the output, right-aligned.
      const Shape& out = spec.out_shape;
      shape.insert(shape.begin(), out.size() - shape.size(), 1);
      auto strides = graph::strides_of(shape);
      for (size_t d = 0; d < out.size(); ++d)
        if (shape[d] == 1) strides[d] = 0;
      spec.operand_strides.push_back(std::move(strides));
      step.args.push_back(value(v));
      const int k = static_cast<int>(spec.operand_strides.size() - 1);
      operand_of.emplace(v, k);
      return k;
    };
    using Op = ElementwiseInstr::Op;
    for (int i : group) {
      const Node& n = g().nodes()[i];
      ElementwiseInstr in;
      in.a = ref(n.inputs[0], g().type(n.inputs[0]).shape);
      switch (n.op) {
        case OpKind::kRelu:
          in.op = Op::kRelu;
          break;
        case OpKind::kClip:
          in.op = Op::kClip;
          in.p0 = static_cast<float>(
              n.attrs.get_float("min", -std::numeric_limits<double>::infinity()));
          in.p1 =
              static_cast<float>(n.attrs.get_float("max", std::numeric_limits<double>::infinity()));
          break;
        case OpKind::kSigmoid:
          in.op = Op::kSigmoid;
          break;
        case OpKind::kHardSigmoid:
          in.op = Op::kHardSigmoid;
          in.p0 = static_cast<float>(n.attrs.get_float("alpha", 0.2));
          in.p1 = static_cast<float>(n.attrs.get_float("beta", 0.5));
          break;
        case OpKind::kHardSwish:
          in.op = Op::kHardSwish;
          break;
        case OpKind::kIdentity:
          in.op = Op::kIdentity;
          break;
        case OpKind::kBiasAdd: {
          in.op = Op::kAdd;
          const int64_t rank = static_cast<int64_t>(spec.out_shape.size());
          int64_t axis = n.attrs.get_int("axis", 1);
          if (axis < 0) axis += rank;
          Shape shape(static_cast<size_t>(rank - axis), 1);
          shape[0] = spec.out_shape[static_cast<size_t>(axis)];
          in.b = ref(n.inputs[1], shape);
          break;
        }
        default:
          in.op = n.op == OpKind::kAdd        ? Op::kAdd
                  : n.op == OpKind::kSubtract ? Op::kSub
                  : n.op == OpKind::kMultiply ? Op::kMul
                                              : Op::kDiv;
          in.b = ref(n.inputs[1], g().type(n.inputs[1]).shape);
      }
      spec.program.push_back(in);
      result_of[n.output] = static_cast<int>(spec.program.size() - 1);
    }
    step.extent = compiler::parallel_extent(spec);
    step.symbol = kernel_symbol(std::move(spec));
  }

  ScheduleFn conv_schedule_;
  int lanes_;
  LoweredNetwork out_;
  std::map<std::string, std::string> symbols_;
};

}  // namespace

Expected<LoweredNetwork> lower_network(const Graph& fused, const ScheduleFn& conv_schedule,
                                       int vector_lanes) {
  return Lowerer(fused, conv_schedule, vector_lanes).run();
}

}  // namespace tensortune::backend
