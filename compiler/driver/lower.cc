// Implements lower_network (compile.h): fusion groups to steps and kernel specs.
#include <algorithm>
#include <map>
#include <optional>

#include "compiler/driver/compile.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/simplify_epilogue.h"
#include "schedule_space/layout.h"

namespace tensortune::driver {
using codegen::DepthwiseKernelSpec;
using codegen::ElementwiseInstr;
using codegen::ElementwiseKernelSpec;
using codegen::TemplateKernelSpec;
using epilogue::EpilogueOp;
using runtime::ArgRef;
using runtime::Step;

namespace {

namespace ss = schedule_space;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;
using graph::ValueId;

// Reductions over a run of adjacent axes (LayerNorm's mean and variance, global pools written
// as ReduceMean, a sequence's mean) and softmax over the last axis run as native loops.
bool native_axes(const Graph& g, const Node& n) {
  const int64_t rank = g.type(n.inputs[0]).shape.size();
  if (n.op == OpKind::kSoftmax)
    return graph::normalize_axis(graph::attrs_as<graph::SoftmaxAttrs>(n.attrs).axis, rank) ==
           rank - 1;
  const auto axes = graph::attrs_as<graph::ReduceAttrs>(n.attrs).axes;  // resolved, sorted
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return false;
  return !axes.empty();
}

bool is_native(const Graph& g, const Node& n) {
  switch (n.op) {
    case OpKind::kReduceMean:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kSoftmax:
      return native_axes(g, n);
    case OpKind::kMatMul:  // a constant weight's became a dense (DenseFromMatMul)
    case OpKind::kConcat:
      return true;
    case OpKind::kWhere:  // a bool condition choosing between floats (a causal mask)
      return g.type(n.inputs[0]).dtype == graph::DType::kBool &&
             g.type(n.inputs[1]).dtype == graph::DType::kFloat32 &&
             g.type(n.inputs[2]).dtype == graph::DType::kFloat32;
    case OpKind::kPad: {  // constant, cropping nothing
      const auto a = graph::attrs_as<graph::PadAttrs>(n.attrs);
      return a.mode == 0 &&
             std::all_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p >= 0; });
    }
    case OpKind::kInstanceNorm:  // scale and bias of the channels (shape inference checks)
      return g.type(n.inputs[0]).shape.size() >= 2;
    case OpKind::kLayerNorm: {  // scale and bias spanning the normalised axes
      const Shape& x = g.type(n.inputs[0]).shape;
      const int64_t axis =
          graph::normalize_axis(graph::attrs_as<graph::LayerNormAttrs>(n.attrs).axis, x.size());
      const int64_t len = graph::num_elements(Shape(x.begin() + axis, x.end()));
      for (size_t i = 1; i < n.inputs.size(); ++i)
        if (graph::num_elements(g.type(n.inputs[i]).shape) != len) return false;
      return true;
    }
    default:
      break;
  }
  switch (n.op) {
    case OpKind::kLayoutTransform:
    case OpKind::kGlobalAvgPool2d:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return true;
    default:
      return false;
  }
}

/// The instruction of an element-wise operator (ops.def's Unary and Binary categories, same
/// names); nothing for the others. Generated from the list, so every operator has its answer.
std::optional<ElementwiseInstr::Op> instruction_of(OpKind op) {
  switch (op) {
#define TT_ELEMENTWISE_Anchor(kind) \
  case OpKind::kind:                \
    return std::nullopt;
#define TT_ELEMENTWISE_Other(kind) \
  case OpKind::kind:               \
    return std::nullopt;
#define TT_ELEMENTWISE_Unary(kind) \
  case OpKind::kind:               \
    return ElementwiseInstr::Op::kind;
#define TT_ELEMENTWISE_Binary(kind) \
  case OpKind::kind:                \
    return ElementwiseInstr::Op::kind;
#define TT_OP(kind, name, attrs, category) TT_ELEMENTWISE_##category(kind)
#include "compiler/graph/ops.def"
#undef TT_ELEMENTWISE_Anchor
#undef TT_ELEMENTWISE_Other
#undef TT_ELEMENTWISE_Unary
#undef TT_ELEMENTWISE_Binary
  }
  return std::nullopt;
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
      const auto a = graph::attrs_as<graph::LayoutTransformAttrs>(n.attrs);
      append_block(a.from_block);
      label.append("->");
      append_block(a.to_block);
      label.push_back(')');
    }
  }
  return label;
}

class Lowerer {
 public:
  Lowerer(Graph g, const KernelChoiceFn& choose, int lanes, bool row_kernels)
      : choose_(choose), lanes_(lanes), row_kernels_(row_kernels) {
    out_.graph = std::move(g);
    uses_ = out_.graph.use_counts();
  }

  Expected<LoweredNetwork> run() {
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

  ArgRef param(Tensor t) {
    out_.params.push_back(std::move(t));
    return {ArgRef::Kind::kParam, static_cast<int>(out_.params.size() - 1)};
  }

  static ArgRef value(ValueId v) { return {ArgRef::Kind::kValue, v}; }

  std::string kernel_symbol(codegen::NetworkKernelSpec spec) {
    const std::string key = codegen::spec_key(spec);
    auto it = symbols_.find(key);
    if (it != symbols_.end()) return it->second;
    std::string symbol = "tt_kernel_" + std::to_string(out_.kernels.size());
    out_.kernels.push_back({symbol, std::move(spec)});
    symbols_.emplace(key, symbol);
    return symbol;
  }

  /// Appends the fused epilogue's ops and operands to the step and the spec. FuseOps formed the
  /// group by the same rule, so a node that does not fuse is a broken invariant, not a split.
  Expected<std::vector<EpilogueOp>> epilogue(Step& step, const std::vector<int>& group,
                                             const Node& head, std::vector<EpilogueOp> ops = {}) {
    int operand = epilogue::epilogue_operand_count(ops);
    ValueId v = head.output;
    // Runs of fused steps, each simplified on its own: a value stored midway (read by other
    // groups: FuseOps' store_midway) is stored as the graph computes it.
    std::vector<std::vector<passes::FusedOp>> runs(1);
    auto store_if_read_outside = [&](ValueId value, size_t k) {
      if (k + 1 >= group.size() || !read_outside(value, group)) return;
      passes::FusedOp store;
      store.op.kind = EpilogueOp::Kind::kStoreTensor;
      store.value = value;
      runs.push_back({std::move(store)});
    };
    store_if_read_outside(v, 0);  // the anchor's own result (a float kernel's)
    for (size_t k = 1; k < group.size(); ++k) {
      const Node& n = g().nodes()[group[k]];
      // A node that does not read the chain's value dequantizes bytes a later node of the
      // group adds (FuseOps absorbed it): the kernel reads the bytes, the node computes nothing.
      if (std::find(n.inputs.begin(), n.inputs.end(), v) == n.inputs.end()) continue;
      auto f = passes::fuse_epilogue_node(g(), head, n, v);
      if (!f)
        return Error{ErrorCode::kInternal, "fusion group of '" + head.name + "': its " +
                                               graph::op_name(n.op) + " node '" + n.name +
                                               "' is not an epilogue the kernel fuses"};
      if (f->op.kind == EpilogueOp::Kind::kAddDequantized && !absorbed_here(n, v, head)) {
        // Its dequantization runs in a group of its own: read the float it stores, since the
        // memory plan keeps the bytes alive only for their readers in the graph.
        f->op.kind = EpilogueOp::Kind::kAddTensor;
        f->value = n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
      }
      runs.back().push_back(std::move(*f));
      v = n.output;
      store_if_read_outside(v, k);
    }
    for (std::vector<passes::FusedOp>& run : runs)
      for (passes::FusedOp& f : passes::simplify_epilogue(std::move(run))) {
        if (epilogue::uses_operand(f.op.kind)) {
          f.op.operand = operand++;
          step.args.push_back(f.param ? param(std::move(*f.param)) : value(f.value));
        }
        ops.push_back(f.op);
      }
    return ops;
  }

  /// Whether the dequantized-bytes operand of `n` (beside the chain value `v`) was absorbed into
  /// the group of `head`.
  bool absorbed_here(const Node& n, ValueId v, const Node& head) const {
    const auto d = passes::dequantized_bytes(g(), n.inputs[0] == v ? n.inputs[1] : n.inputs[0]);
    if (!d) return false;
    for (int i : d->nodes)
      if (g().nodes()[static_cast<size_t>(i)].fusion_group != head.fusion_group) return false;
    return head.fusion_group >= 0;
  }

  /// Whether a node outside `group`, or the graph's outputs, read `v`: it has more uses than
  /// the group's nodes make of it.
  bool read_outside(ValueId v, const std::vector<int>& group) const {
    int inside = 0;
    for (int i : group)
      for (ValueId in : g().nodes()[static_cast<size_t>(i)].inputs) inside += in == v;
    return uses_[static_cast<size_t>(v)] > inside;
  }

  Status lower_group(const std::vector<int>& group) {
    const Node& head = g().nodes()[group[0]];
    Step step;
    step.nodes = group;
    step.output = g().nodes()[group.back()].output;
    step.label = op_label(g(), group);
    const bool floats = passes::all_float(g(), group);
    const bool kernel_anchor = passes::is_kernel_anchor(g(), head);
    if (kernel_anchor) {
      TT_RETURN_IF_ERROR(lower_anchor(step, group, head));
    } else if (is_elementwise_chain(group)) {
      TT_RETURN_IF_ERROR(lower_elementwise(step, group));
    } else if (group.size() > 1) {
      return Error{ErrorCode::kInternal, "fusion group of '" + head.name + "' (" + step.label +
                                             ") has no kernel: FuseOps forms groups only around "
                                             "kernel anchors and float element-wise chains"};
    } else if (floats && (head.op == OpKind::kMaxPool2d || head.op == OpKind::kAvgPool2d)) {
      lower_pool(step, head);
    } else if (floats && row_kernels_ && head.op == OpKind::kSoftmax && native_axes(g(), head)) {
      lower_softmax(step, head);
    } else if (floats && row_kernels_ && head.op == OpKind::kLayerNorm && is_native(g(), head)) {
      lower_layer_norm(step, head);
    } else if ((floats || moves_bytes(head) || head.op == OpKind::kWhere) && is_native(g(), head)) {
      step.kind = Step::Kind::kNative;
    } else {
      step.kind = Step::Kind::kInterpret;
    }
    out_.steps.push_back(std::move(step));
    return Status{};
  }

  /// A layout transform or pad of 8-bit integers (quantized data between int8 kernels, the
  /// channels an int8 kernel's input is padded to): native too.
  bool moves_bytes(const Node& n) const {
    return (n.op == OpKind::kLayoutTransform || n.op == OpKind::kPad) &&
           graph::buffer_element_size(g().type(n.output).dtype) == 1;
  }

  /// A value known to lie in int32's range (whichever group computed it).
  bool is_int32_bounded(ValueId v) const {
    const auto range = passes::known_range(g(), v);
    return range && range->first >= -2147483648.0 && range->second < 2147483648.0;
  }

  /// Float element-wise nodes, the last perhaps a quantizing cast (fusion_rules.h).
  bool is_elementwise_chain(const std::vector<int>& group) const {
    for (size_t k = 0; k < group.size(); ++k) {
      const Node& n = g().nodes()[group[k]];
      const bool last = k + 1 == group.size();
      if (!(passes::is_elementwise(n.op) && passes::is_float_node(g(), n)) &&
          !(last && passes::is_quantizing_cast(g(), n)))
        return false;
    }
    return true;
  }

  /// An integer convolution's zero point: the padding reads it, and the kernel's int32 result
  /// loses z * (the sum of each output channel's weights), an int32 per channel (first in the
  /// epilogue), so that the result is ConvInteger's sum of (x - z) * w.
  std::vector<EpilogueOp> zero_point_correction(Step& step, const Node& head,
                                                const Tensor& plain_weight, int64_t* pad) {
    *pad = 0;
    if (head.inputs.size() < 3) return {};
    *pad = g().constant(head.inputs[2])->i64.at(0);
    if (*pad == 0) return {};
    const int64_t channels = plain_weight.shape[0];
    const int64_t per_channel = plain_weight.size() / channels;
    Tensor correction = Tensor::zeros(graph::DType::kInt32, {channels});
    for (int64_t o = 0; o < channels; ++o) {
      int64_t sum = 0;
      for (int64_t i = 0; i < per_channel; ++i) sum += plain_weight.i64[o * per_channel + i];
      correction.i64[o] = graph::wrap_integer(graph::DType::kInt32, -*pad * sum);
    }
    step.args.push_back(param(std::move(correction)));
    return {EpilogueOp{EpilogueOp::Kind::kAddChannel, 0}};
  }

  /// A conv2d, dense or batch matmul node: the template kernel chosen for it, or a depthwise
  /// convolution's built-in kernel where no template of the target serves it.
  Status lower_anchor(Step& step, const std::vector<int>& group, const Node& head) {
    step.kind = Step::Kind::kKernel;
    step.args = {value(head.inputs[0]), value(head.inputs[1]), value(step.output)};
    NodeKernelRequest request;
    request.node = head.name;
    request.constant_weight = g().is_constant(head.inputs[1]);
    std::optional<passes::ConvAnchor> depthwise;
    const auto batch_matmul = passes::batch_matmul_anchor(g(), head);
    if (batch_matmul) {
      request.workload = *batch_matmul;
    } else if (const auto attention = passes::attention_anchor(g(), head)) {
      request.workload = *attention;
      // v and the mask: the template's extra inputs, the kernel's first operands.
      for (size_t i = 2; i < head.inputs.size(); ++i) step.args.push_back(value(head.inputs[i]));
    } else if (head.op == OpKind::kDense) {
      const Shape& x = g().type(head.inputs[0]).shape;
      const Shape& k = g().type(head.inputs[1]).shape;
      ss::DenseWorkload dense{x[0], k[0], x[1]};
      if (passes::is_integer_dense(g(), head))
        dense.precision = passes::integer_precision(g(), head.inputs[1]);
      request.workload = dense;
    } else {
      const passes::ConvAnchor a = *passes::conv_anchor(g(), head);
      request.workload = a.workload;
      request.blocked = head.op == OpKind::kConv2dNCHWc;
      request.ic_block = a.ic_bn;
      request.oc_block = a.oc_bn;
      depthwise = a.depthwise ? std::optional<passes::ConvAnchor>(a) : std::nullopt;
    }
    Expected<ss::TemplateConfig> chosen = choose_(request);
    // The built-in kernel serves depthwise convolutions on backends without a template of them.
    if (!chosen && depthwise && chosen.error().code == ErrorCode::kNotFound)
      return lower_depthwise(step, group, head, *depthwise);
    // A batch matmul no template of the target serves (FuseOps left it alone) runs natively.
    if (!chosen && batch_matmul && chosen.error().code == ErrorCode::kNotFound &&
        group.size() == 1) {
      step.kind = Step::Kind::kNative;
      step.args.clear();
      return Status{};
    }
    TT_ASSIGN_OR_RETURN(ss::TemplateConfig kernel, std::move(chosen));
    const ss::Template& t = kernel.tmpl();
    const ss::KernelSignature sig = kernel.signature();
    std::vector<EpilogueOp> ops;
    int64_t pad = 0;
    const bool integer = passes::is_integer_conv(g(), head) || passes::is_integer_dense(g(), head);
    if (t.needs_constant_weight()) {
      // The kernel reads the weight transformed or packed: done once, here, from the plain
      // weight (a blocked node's is already in OIHW[x]i[y]o).
      const Tensor& w = *g().constant(head.inputs[1]);
      const Tensor plain = request.blocked ? ss::unpack_oihwio(w) : w;
      step.args[1] = param(t.pack_weight(sig, plain));
      if (integer) ops = zero_point_correction(step, head, plain, &pad);
    } else if (integer) {
      return internal_error("node '" + head.name + "': the integer template " +
                            std::string(t.name()) + " does not pack its weights");
    }
    TT_ASSIGN_OR_RETURN(ops, epilogue(step, group, head, std::move(ops)));
    step.extent = sig.parallel_extent;
    const graph::Shape& out_shape = g().type(step.output).shape;
    if (sig.rows_per_block > 0 && sig.row_blocks > 0 && sig.row_inner > 0 &&
        sig.parallel_extent % (sig.row_blocks * sig.row_inner) == 0 && out_shape.size() >= 2 &&
        out_shape[out_shape.size() - 2] == sig.rows_per_block * sig.row_blocks) {
      step.rows_per_block = sig.rows_per_block;
      step.row_blocks = sig.row_blocks;
      step.row_inner = sig.row_inner;
    }
    step.flop = t.flop(kernel.task);
    if (t.algorithm() != schedule_space::kDirectAlgorithm)
      step.label += "(" + std::string(t.algorithm()) + ")";
    // Profiles tell depthwise steps (memory-bound, judged by GB/s) from dense convolutions.
    if (const auto* c = std::get_if<ss::Conv2dWorkload>(&kernel.task.workload);
        c && c->is_depthwise())
      step.label = "depthwise_" + step.label;
    step.symbol = kernel_symbol(TemplateKernelSpec{std::move(kernel), std::move(ops), pad});
    return Status{};
  }

  Status lower_depthwise(Step& step, const std::vector<int>& group, const Node& head,
                         const passes::ConvAnchor& a) {
    if (a.ic_bn != a.oc_bn)
      return internal_error("node '" + head.name +
                            "': the built-in depthwise kernel needs equal "
                            "input and output blocks, got " +
                            std::to_string(a.ic_bn) + " and " + std::to_string(a.oc_bn));
    TT_ASSIGN_OR_RETURN(auto ops, epilogue(step, group, head));
    DepthwiseKernelSpec spec{a.workload, a.oc_bn,
                             codegen::depthwise_row_width(a.workload, a.oc_bn, lanes_),
                             std::move(ops)};
    step.extent = codegen::parallel_extent(spec);
    step.label = "depthwise_" + step.label;
    step.flop = a.workload.flop() / double(a.workload.in_channels);
    step.symbol = kernel_symbol(std::move(spec));
    return Status{};
  }

  void lower_pool(Step& step, const Node& n) {
    codegen::MaxPoolKernelSpec spec;
    spec.in_shape = g().type(n.inputs[0]).shape;
    if (spec.in_shape.size() == 4) spec.in_shape.push_back(1);  // NCHW as NCHW[1]c
    const Shape& out = g().type(n.output).shape;
    spec.out_h = out[2];
    spec.out_w = out[3];
    const auto a = graph::attrs_as<graph::Pool2dAttrs>(n.attrs);
    const graph::Ints &k = a.kernel, &s = a.strides, &p = a.pads, &d = a.dilations;
    spec.kernel_h = k[0];
    spec.kernel_w = k[1];
    spec.stride_h = s[0];
    spec.stride_w = s[1];
    spec.pad_top = p[0];
    spec.pad_left = p[1];
    spec.dilation_h = d[0];
    spec.dilation_w = d[1];
    spec.average = n.op == OpKind::kAvgPool2d;
    spec.count_include_pad = a.count_include_pad != 0;
    spec.pad_bottom = p[2];
    spec.pad_right = p[3];
    step.kind = Step::Kind::kKernel;
    step.args = {value(step.output), value(n.inputs[0])};
    step.extent = codegen::parallel_extent(spec);
    step.symbol = kernel_symbol(std::move(spec));
  }

  /// Softmax over the last axis: one row per parallel iteration.
  void lower_softmax(Step& step, const Node& n) {
    const Shape& shape = g().type(n.output).shape;
    codegen::SoftmaxKernelSpec spec;
    spec.len = shape.empty() ? 1 : shape.back();
    spec.rows = spec.len == 0 ? 0 : graph::num_elements(shape) / spec.len;
    step.kind = Step::Kind::kKernel;
    step.args = {value(step.output), value(n.inputs[0])};
    step.extent = spec.rows;
    step.symbol = kernel_symbol(spec);
  }

  /// Layer normalisation over the trailing axes from its axis: one row per parallel iteration
  /// (is_native checked that scale and bias span the row).
  void lower_layer_norm(Step& step, const Node& n) {
    const Shape& shape = g().type(n.inputs[0]).shape;
    const auto a = graph::attrs_as<graph::LayerNormAttrs>(n.attrs);
    const int64_t axis = graph::normalize_axis(a.axis, shape.size());
    codegen::LayerNormKernelSpec spec;
    spec.len = graph::num_elements(Shape(shape.begin() + axis, shape.end()));
    spec.rows = spec.len == 0 ? 0 : graph::num_elements(shape) / spec.len;
    spec.epsilon = a.epsilon;
    spec.has_bias = n.inputs.size() > 2;
    step.kind = Step::Kind::kKernel;
    step.args = {value(step.output), value(n.inputs[0]), value(n.inputs[1])};
    if (spec.has_bias) step.args.push_back(value(n.inputs[2]));
    step.extent = spec.rows;
    step.symbol = kernel_symbol(spec);
  }

  /// The attributes an instruction reads (clip bounds, alphas, ...).
  static void set_parameters(const Node& n, ElementwiseInstr& in) {
    if (n.op == OpKind::kClip) {
      const auto a = graph::attrs_as<graph::ClipAttrs>(n.attrs);
      in.p0 = static_cast<float>(a.min);
      in.p1 = static_cast<float>(a.max);
    } else if (n.op == OpKind::kHardSigmoid) {
      const auto a = graph::attrs_as<graph::HardSigmoidAttrs>(n.attrs);
      in.p0 = static_cast<float>(a.alpha);
      in.p1 = static_cast<float>(a.beta);
    } else if (n.op == OpKind::kLeakyRelu) {
      in.p0 = static_cast<float>(graph::attrs_as<graph::LeakyReluAttrs>(n.attrs).alpha);
    } else if (n.op == OpKind::kElu) {
      in.p0 = static_cast<float>(graph::attrs_as<graph::EluAttrs>(n.attrs).alpha);
    } else if (n.op == OpKind::kSelu) {
      const auto a = graph::attrs_as<graph::SeluAttrs>(n.attrs);
      in.p0 = static_cast<float>(a.alpha);
      in.p1 = static_cast<float>(a.gamma);
    } else if (n.op == OpKind::kGelu) {
      in.p0 = static_cast<float>(graph::attrs_as<graph::GeluAttrs>(n.attrs).tanh);
    }
  }

  Status lower_elementwise(Step& step, const std::vector<int>& group) {
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
      if (passes::is_quantizing_cast(g(), n)) {  // the store converts
        spec.out_dtype = g().type(n.output).dtype;
        spec.cast_input_bounded = is_int32_bounded(n.inputs[0]);
        if (!spec.program.empty()) continue;
        in.op = Op::kIdentity;
      } else if (n.op ==
                 OpKind::kBiasAdd) {  // an add of the channel vector, broadcast from its axis
        in.op = Op::kAdd;
        const int64_t rank = static_cast<int64_t>(spec.out_shape.size());
        int64_t axis = graph::attrs_as<graph::BiasAddAttrs>(n.attrs).axis;
        if (axis < 0) axis += rank;
        Shape shape(static_cast<size_t>(rank - axis), 1);
        shape[0] = spec.out_shape[static_cast<size_t>(axis)];
        in.b = ref(n.inputs[1], shape);
      } else {
        const std::optional<Op> op = instruction_of(n.op);
        if (!op)
          return Error{ErrorCode::kInternal, "fusion group of '" + g().nodes()[group[0]].name +
                                                 "': " + graph::op_name(n.op) + " node '" + n.name +
                                                 "' is not element-wise"};
        in.op = *op;
        if (graph::is_binary_elementwise(n.op))
          in.b = ref(n.inputs[1], g().type(n.inputs[1]).shape);
        set_parameters(n, in);
      }
      spec.program.push_back(in);
      result_of[n.output] = static_cast<int>(spec.program.size() - 1);
    }
    step.extent = codegen::parallel_extent(spec);
    step.symbol = kernel_symbol(std::move(spec));
    return Status{};
  }

  const KernelChoiceFn& choose_;
  int lanes_;
  bool row_kernels_;
  LoweredNetwork out_;
  std::vector<int> uses_;  ///< per value: node inputs and graph outputs that read it
  std::map<std::string, std::string> symbols_;
};

}  // namespace

Expected<LoweredNetwork> lower_network(const Graph& fused, const KernelChoiceFn& choose,
                                       int vector_lanes, bool row_kernels) {
  return Lowerer(fused, choose, vector_lanes, row_kernels).run();
}

}  // namespace tensortune::driver
