// Converters for element-wise math, comparisons and logic, variadic element-wise operators,
// reductions and normalisation (onnx_shape_ops.cc has padding, resizing, broadcasting,
// splitting and the generators of constants). Each maps the operator's opset-dependent form
// (attribute or input) onto the IR's resolved attributes; anything else is refused naming the node
// and what.
#include <cmath>
#include <numeric>

#include "compiler/frontend/onnx_import_context.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::frontend {
namespace {

using graph::Attrs;
using graph::OpKind;
using graph::ValueId;

template <OpKind kOp>
Status unary(ImportContext& c, const onnx::NodeProto& n) {
  return emit_unary(c, n, kOp);
}

template <OpKind kOp>
Status binary(ImportContext& c, const onnx::NodeProto& n) {
  return emit_binary(c, n, kOp);
}

// Pow: x^2 (LayerNorm's variance as exporters write it) is x * x, which the element-wise
// kernels compile and which equals pow's correctly rounded square exactly.
Status pow(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId e, c.input(n, 1));
  const graph::Tensor* exponent = c.graph().constant(e);
  if (graph::is_float(c.graph().type(x).dtype) && exponent && exponent->size() == 1 &&
      exponent->at(0) == 2.0 && graph::num_elements(c.graph().type(x).shape) >= 1) {
    Shape out;
    if (graph::broadcast_shapes(c.graph().type(x).shape, exponent->shape, &out) &&
        out == c.graph().type(x).shape) {
      TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kMultiply, node_label(n), {x, x}));
      return bind(c, n, y);
    }
  }
  return emit_binary(c, n, OpKind::kPow);
}

// Mod: fmod = 1 is C's fmod (the dividend's sign), 0 Python's % (the divisor's); ONNX allows
// fmod = 0 on integers only.
Status mod(ImportContext& c, const onnx::NodeProto& n) {
  const int64_t fmod = NodeAttributes(n).get_int("fmod", 0);
  if (fmod != 0 && fmod != 1)
    return invalid_argument("Mod node '" + node_label(n) + "': fmod = " + std::to_string(fmod) +
                            ", must be 0 or 1");
  TT_ASSIGN_OR_RETURN(ValueId a, c.input(n, 0));
  if (fmod == 0 && graph::is_float(c.graph().type(a).dtype))
    return invalid_argument("Mod node '" + node_label(n) +
                            "': fmod = 0 on float operands (ONNX requires fmod = 1 for them)");
  TT_ASSIGN_OR_RETURN(ValueId b, c.input(n, 1));
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kMod, node_label(n), {a, b},
                                        graph::to_attrs(graph::ModAttrs{fmod})));
  return bind(c, n, y);
}

Status alpha_op(ImportContext& c, const onnx::NodeProto& n, OpKind op, float fallback) {
  return emit_unary(c, n, op,
                    Attrs{{"alpha", double(NodeAttributes(n).get_float("alpha", fallback))}});
}

Status selu(ImportContext& c, const onnx::NodeProto& n) {
  NodeAttributes a(n);
  graph::SeluAttrs s;
  if (a.has("alpha")) s.alpha = a.get_float("alpha", 0);
  if (a.has("gamma")) s.gamma = a.get_float("gamma", 0);
  return emit_unary(c, n, OpKind::kSelu, graph::to_attrs(s));
}

Status gelu(ImportContext& c, const onnx::NodeProto& n) {
  const std::string mode = NodeAttributes(n).get_string("approximate", "none");
  if (mode != "none" && mode != "tanh")
    return unsupported(n, "attribute approximate='" + mode + "' (none or tanh)");
  return emit_unary(c, n, OpKind::kGelu, Attrs{{"tanh", int64_t{mode == "tanh"}}});
}

// Max, Min, Sum, Mean over one or more inputs: a chain of binary nodes (Mean then scales).
Status variadic(ImportContext& c, const onnx::NodeProto& n, OpKind op, bool mean) {
  if (n.input_size() < 1) return invalid_argument("node '" + node_label(n) + "' has no inputs");
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(ValueId acc, c.input(n, 0));
  for (int i = 1; i < n.input_size(); ++i) {
    TT_ASSIGN_OR_RETURN(ValueId next, c.input(n, i));
    TT_ASSIGN_OR_RETURN(
        acc, c.emit(op, name + (i + 1 < n.input_size() || mean ? "." + std::to_string(i) : ""),
                    {acc, next}));
  }
  if (mean && n.input_size() > 1) {
    if (!graph::is_float(c.graph().type(acc).dtype))
      return unsupported(n, "Mean of integer tensors");
    const ValueId scale = c.graph().add_constant(
        name + ".inv_count", graph::Tensor::from_floats({}, {1.0f / float(n.input_size())}));
    TT_ASSIGN_OR_RETURN(acc, c.emit(OpKind::kMultiply, name, {acc, scale}));
  } else if (n.input_size() == 1) {
    TT_ASSIGN_OR_RETURN(acc, c.emit(OpKind::kIdentity, name, {acc}));
  }
  return bind(c, n, acc);
}

Status where(ImportContext& c, const onnx::NodeProto& n) {
  std::vector<ValueId> in;
  for (int i = 0; i < 3; ++i) {
    TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, i));
    in.push_back(v);
  }
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kWhere, node_label(n), in));
  return bind(c, n, y);
}

// Axes normalised against `rank`, or an error naming the node and the axis.
Expected<std::vector<int64_t>> normalize_axes(const onnx::NodeProto& n, std::vector<int64_t> axes,
                                              int64_t rank) {
  for (auto& a : axes) {
    const int64_t axis = graph::normalize_axis(a, rank);
    if (axis < 0)
      return invalid_argument("node '" + node_label(n) + "': axis " + std::to_string(a) +
                              " is out of range for rank " + std::to_string(rank));
    a = axis;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// ReduceSum took its axes as an input from opset 13, the others from 18.
Status reduce(ImportContext& c, const onnx::NodeProto& n, OpKind op) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const int64_t rank = c.graph().type(x).shape.size();
  NodeAttributes a(n);
  const int64_t since = op == OpKind::kReduceSum ? 13 : 18;
  TT_ASSIGN_OR_RETURN(auto axes, list_operand(c, n, since, "axes", 1, {}));
  if (axes.empty()) {
    if (a.get_int("noop_with_empty_axes", 0)) return emit_unary(c, n, OpKind::kIdentity);
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  TT_ASSIGN_OR_RETURN(axes, normalize_axes(n, std::move(axes), rank));
  graph::ReduceAttrs attrs;
  attrs.axes = axes;
  attrs.keepdims = a.get_int("keepdims", 1);
  return emit_unary(c, n, op, graph::to_attrs(attrs));
}

// LpNormalization: x divided by its L1 or L2 norm along `axis` (ONNX's reference: a zero
// norm gives NaN, 0/0).
Status lp_normalization(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  NodeAttributes a(n);
  const int64_t p = a.get_int("p", 2);
  if (p != 1 && p != 2) return unsupported(n, "attribute p=" + std::to_string(p) + " (1 or 2)");
  const int64_t rank = c.graph().type(x).shape.size();
  const int64_t axis = graph::normalize_axis(a.get_int("axis", -1), rank);
  if (axis < 0) return invalid_argument("node '" + node_label(n) + "': axis is out of range");
  graph::ReduceAttrs over;
  over.axes = {axis};
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(ValueId norm, c.emit(p == 1 ? OpKind::kReduceL1 : OpKind::kReduceL2,
                                           name + ".norm", {x}, graph::to_attrs(over)));
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kDivide, name, {x, norm}));
  return bind(c, n, y);
}

Status arg_reduce(ImportContext& c, const onnx::NodeProto& n, OpKind op) {
  NodeAttributes a(n);
  graph::ArgReduceAttrs attrs;
  attrs.axis = a.get_int("axis", 0);
  attrs.keepdims = a.get_int("keepdims", 1);
  attrs.select_last_index = a.get_int("select_last_index", 0);
  return emit_unary(c, n, op, graph::to_attrs(attrs));
}

Status layer_norm(ImportContext& c, const onnx::NodeProto& n) {
  NodeAttributes a(n);
  std::vector<ValueId> in;
  for (int i = 0; i < 3; ++i) {
    if (i == 2 && !c.has_input(n, 2)) break;
    TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, i));
    in.push_back(v);
  }
  graph::LayerNormAttrs attrs;
  attrs.axis = a.get_int("axis", -1);
  if (a.has("epsilon")) attrs.epsilon = a.get_float("epsilon", 0);
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kLayerNorm, name, in, graph::to_attrs(attrs)));
  if (n.output_size() < 2 || (n.output(1).empty() && (n.output_size() < 3 || n.output(2).empty())))
    return bind(c, n, y);
  // Mean and InvStdDev, when asked for: reductions over the normalised axes, kept as dims.
  c.bind(n.output(0), y);
  const int64_t rank = c.graph().type(in[0]).shape.size();
  const int64_t axis = graph::normalize_axis(attrs.axis, rank);
  if (axis < 0) return invalid_argument("node '" + name + "': axis is out of range");
  graph::ReduceAttrs over;
  for (int64_t d = axis; d < rank; ++d) over.axes.push_back(d);
  TT_ASSIGN_OR_RETURN(ValueId mean,
                      c.emit(OpKind::kReduceMean, name + ".mean", {in[0]}, graph::to_attrs(over)));
  TT_ASSIGN_OR_RETURN(ValueId diff, c.emit(OpKind::kSubtract, name + ".diff", {in[0], mean}));
  TT_ASSIGN_OR_RETURN(ValueId sq, c.emit(OpKind::kMultiply, name + ".sq", {diff, diff}));
  TT_ASSIGN_OR_RETURN(ValueId var,
                      c.emit(OpKind::kReduceMean, name + ".var", {sq}, graph::to_attrs(over)));
  const ValueId eps = c.graph().add_constant(
      name + ".epsilon", graph::Tensor::from_floats({}, {static_cast<float>(attrs.epsilon)}));
  TT_ASSIGN_OR_RETURN(ValueId shifted, c.emit(OpKind::kAdd, name + ".var_eps", {var, eps}));
  TT_ASSIGN_OR_RETURN(ValueId root, c.emit(OpKind::kSqrt, name + ".std", {shifted}));
  TT_ASSIGN_OR_RETURN(ValueId inv, c.emit(OpKind::kReciprocal, name + ".inv_std", {root}));
  if (!n.output(1).empty()) c.bind(n.output(1), mean);
  if (n.output_size() > 2 && !n.output(2).empty()) c.bind(n.output(2), inv);
  return ok_status();
}

Status instance_norm(ImportContext& c, const onnx::NodeProto& n) {
  std::vector<ValueId> in;
  for (int i = 0; i < 3; ++i) {
    TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, i));
    in.push_back(v);
  }
  NodeAttributes a(n);
  graph::BatchNormAttrs attrs;
  if (a.has("epsilon")) attrs.epsilon = a.get_float("epsilon", 0);
  TT_ASSIGN_OR_RETURN(ValueId y,
                      c.emit(OpKind::kInstanceNorm, node_label(n), in, graph::to_attrs(attrs)));
  return bind(c, n, y);
}

}  // namespace

void add_math_converters(std::map<std::string, Converter>& t) {
  t["Exp"] = unary<OpKind::kExp>;
  t["Log"] = unary<OpKind::kLog>;
  t["Sqrt"] = unary<OpKind::kSqrt>;
  t["Erf"] = unary<OpKind::kErf>;
  t["Tanh"] = unary<OpKind::kTanh>;
  t["Neg"] = unary<OpKind::kNeg>;
  t["Abs"] = unary<OpKind::kAbs>;
  t["Floor"] = unary<OpKind::kFloor>;
  t["Ceil"] = unary<OpKind::kCeil>;
  t["Round"] = unary<OpKind::kRound>;
  t["Reciprocal"] = unary<OpKind::kReciprocal>;
  t["Softplus"] = unary<OpKind::kSoftplus>;
  t["Mish"] = unary<OpKind::kMish>;
  t["Not"] = unary<OpKind::kNot>;
  t["LeakyRelu"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return alpha_op(c, n, OpKind::kLeakyRelu, 0.01f);
  };
  t["Elu"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return alpha_op(c, n, OpKind::kElu, 1.0f);
  };
  t["Selu"] = selu;
  t["Gelu"] = gelu;
  t["Pow"] = pow;
  t["Mod"] = mod;
  t["LpNormalization"] = lp_normalization;
  t["PRelu"] = binary<OpKind::kPRelu>;
  t["Equal"] = binary<OpKind::kEqual>;
  t["Less"] = binary<OpKind::kLess>;
  t["LessOrEqual"] = binary<OpKind::kLessOrEqual>;
  t["Greater"] = binary<OpKind::kGreater>;
  t["GreaterOrEqual"] = binary<OpKind::kGreaterOrEqual>;
  t["And"] = binary<OpKind::kAnd>;
  t["Or"] = binary<OpKind::kOr>;
  t["Xor"] = binary<OpKind::kXor>;
  t["Max"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return variadic(c, n, OpKind::kMaximum, false);
  };
  t["Min"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return variadic(c, n, OpKind::kMinimum, false);
  };
  t["Sum"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return variadic(c, n, OpKind::kAdd, false);
  };
  t["Mean"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return variadic(c, n, OpKind::kAdd, true);
  };
  t["Where"] = where;
  t["ReduceMean"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceMean);
  };
  t["ReduceSum"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceSum);
  };
  t["ReduceMax"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceMax);
  };
  t["ReduceMin"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceMin);
  };
  t["ReduceProd"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceProd);
  };
  t["ReduceL2"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceL2);
  };
  t["ReduceL1"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceL1);
  };
  t["ReduceSumSquare"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceSumSquare);
  };
  t["ReduceLogSum"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceLogSum);
  };
  t["ReduceLogSumExp"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return reduce(c, n, OpKind::kReduceLogSumExp);
  };
  t["ArgMax"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return arg_reduce(c, n, OpKind::kArgMax);
  };
  t["ArgMin"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return arg_reduce(c, n, OpKind::kArgMin);
  };
  t["LayerNormalization"] = layer_norm;
  t["InstanceNormalization"] = instance_norm;
}

}  // namespace tensortune::frontend
