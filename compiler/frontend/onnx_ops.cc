// One converter per ONNX operator. Each maps the operator's attributes and opset-dependent
// inputs onto the IR's fixed conventions (graph/op.h); anything outside them is refused
// with kUnimplemented, naming the node and what is missing.
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx_import_context.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"
#include "schedule_space/workload.h"

namespace tensortune::frontend {

Expected<graph::Conv2dAttrs> window_attrs(const onnx::NodeProto& n, const Shape& x, int64_t kh,
                                          int64_t kw) {
  NodeAttributes a(n);
  graph::Conv2dAttrs window;
  const auto strides = a.get_ints("strides", window.strides);
  const auto dilations = a.get_ints("dilations", window.dilations);
  if (strides.size() != 2 || dilations.size() != 2)
    return invalid_argument("node '" + node_label(n) + "': strides and dilations need 2 values");
  const std::string mode = a.get_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads = window.pads;
  if (mode == "NOTSET") {
    pads = a.get_ints("pads", window.pads);
    if (pads.size() != 4)
      return invalid_argument("node '" + node_label(n) + "': pads needs 4 values, got " +
                              std::to_string(pads.size()));
  } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    const auto m = mode == "SAME_UPPER" ? schedule_space::AutoPad::kSameUpper
                                        : schedule_space::AutoPad::kSameLower;
    const auto ph = schedule_space::auto_pad(m, x[2], kh, strides[0], dilations[0]);
    const auto pw = schedule_space::auto_pad(m, x[3], kw, strides[1], dilations[1]);
    pads = {ph.begin, pw.begin, ph.end, pw.end};
  } else if (mode != "VALID") {
    return invalid_argument("node '" + node_label(n) + "': auto_pad '" + mode +
                            "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  window.strides = strides;
  window.pads = pads;
  window.dilations = dilations;
  return window;
}

namespace {

using graph::Attrs;
using graph::OpKind;
using graph::Shape;
using graph::ValueId;

Status conv(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId w, c.input(n, 1));
  const Shape& xs = c.graph().type(x).shape;
  const Shape& ws = c.graph().type(w).shape;
  if (xs.size() != 4 || ws.size() != 4)
    return unsupported(
        n, "only 2-D convolution is supported (data has rank " + std::to_string(xs.size()) + ")");
  TT_ASSIGN_OR_RETURN(graph::Conv2dAttrs attrs, window_attrs(n, xs, ws[2], ws[3]));
  attrs.groups = NodeAttributes(n).get_int("group", attrs.groups);
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kConv2d, name, {x, w}, graph::to_attrs(attrs)));
  if (c.has_input(n, 2)) {
    TT_ASSIGN_OR_RETURN(ValueId b, c.input(n, 2));
    TT_ASSIGN_OR_RETURN(y, c.emit(OpKind::kBiasAdd, name + ".bias", {y, b},
                                  graph::to_attrs(graph::BiasAddAttrs{1})));
  }
  return bind(c, n, y);
}

// Dropout at inference: the identity, and a mask of all true when output 1 is asked for.
// Training mode (a constant true training_mode input, opset 12 on) is refused unless its ratio
// is a constant 0, which drops nothing (torchvision's Swin exports its attention dropout of
// p = 0 so).
Status dropout(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  if (c.has_input(n, 2)) {
    TT_ASSIGN_OR_RETURN(const graph::Tensor* training, c.constant_input(n, 2, "training_mode"));
    if (training->size() == 1 && training->at(0) != 0) {
      const graph::Tensor* ratio = nullptr;
      if (c.has_input(n, 1)) {
        TT_ASSIGN_OR_RETURN(ratio, c.constant_input(n, 1, "ratio"));
      }
      if (!ratio || ratio->size() != 1 || ratio->at(0) != 0)
        return unsupported(n, "training_mode=1 with a ratio other than 0");
    }
  }
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kIdentity, node_label(n), {x}));
  c.bind(n.output(0), y);
  if (n.output_size() > 1 && !n.output(1).empty()) {
    graph::Tensor mask = graph::Tensor::zeros(graph::DType::kBool, c.graph().type(x).shape);
    std::fill(mask.i64.begin(), mask.i64.end(), 1);
    c.bind(n.output(1), c.graph().add_constant(node_label(n) + ".mask", std::move(mask)));
  }
  return ok_status();
}

Status batch_norm(ImportContext& c, const onnx::NodeProto& n) {
  NodeAttributes a(n);
  if (a.get_int("training_mode", 0) != 0) return unsupported(n, "training_mode=1");
  std::vector<ValueId> in;
  for (int i = 0; i < 5; ++i) {
    TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, i));
    in.push_back(v);
  }
  graph::BatchNormAttrs attrs;
  attrs.epsilon = a.has("epsilon") ? a.get_float("epsilon", 0) : attrs.epsilon;
  TT_ASSIGN_OR_RETURN(ValueId y,
                      c.emit(OpKind::kBatchNorm, node_label(n), in, graph::to_attrs(attrs)));
  return bind(c, n, y);
}

Status gemm(ImportContext& c, const onnx::NodeProto& n) {
  NodeAttributes at(n);
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(ValueId a, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId b, c.input(n, 1));
  const Attrs swap{{"perm", std::vector<int64_t>{1, 0}}};
  if (at.get_int("transA", 0)) {
    TT_ASSIGN_OR_RETURN(a, c.emit(OpKind::kTranspose, name + ".a_t", {a}, swap));
  }
  // dense takes its weight as [N, K]: B^T unless transB already says so.
  if (!at.get_int("transB", 0)) {
    TT_ASSIGN_OR_RETURN(b, c.emit(OpKind::kTranspose, name + ".b_t", {b}, swap));
  }
  const float alpha = at.get_float("alpha", 1.0f), beta = at.get_float("beta", 1.0f);
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kDense, name, {a, b}));
  if (alpha != 1.0f) {
    ValueId s = c.graph().add_constant(name + ".alpha", graph::Tensor::from_floats({}, {alpha}));
    TT_ASSIGN_OR_RETURN(y, c.emit(OpKind::kMultiply, name + ".scaled", {y, s}));
  }
  if (c.has_input(n, 2)) {
    TT_ASSIGN_OR_RETURN(ValueId bias, c.input(n, 2));
    if (beta != 1.0f) {
      ValueId s = c.graph().add_constant(name + ".beta", graph::Tensor::from_floats({}, {beta}));
      TT_ASSIGN_OR_RETURN(bias, c.emit(OpKind::kMultiply, name + ".c_scaled", {bias, s}));
    }
    TT_ASSIGN_OR_RETURN(y, c.emit(OpKind::kAdd, name + ".bias", {y, bias}));
  }
  return bind(c, n, y);
}

Status clip(ImportContext& c, const onnx::NodeProto& n) {
  NodeAttributes a(n);
  graph::ClipAttrs bounds;  // unbounded unless given
  double &lo = bounds.min, &hi = bounds.max;
  if (c.opset() < 11) {
    if (a.has("min")) lo = a.get_float("min", 0);
    if (a.has("max")) hi = a.get_float("max", 0);
  } else {
    for (int i = 1; i <= 2; ++i) {
      if (!c.has_input(n, i)) continue;
      TT_ASSIGN_OR_RETURN(const graph::Tensor* t, c.constant_input(n, i, i == 1 ? "min" : "max"));
      if (t->size() != 1)
        return invalid_argument("node '" + node_label(n) + "': clip bound must be a scalar");
      (i == 1 ? lo : hi) = t->at(0);
    }
  }
  return emit_unary(c, n, OpKind::kClip, graph::to_attrs(bounds));
}

// Softmax and LogSoftmax.
Status softmax(ImportContext& c, const onnx::NodeProto& n, OpKind op) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const Shape shape = c.graph().type(x).shape;
  const int64_t rank = shape.size();
  const std::string name = node_label(n);
  if (c.opset() >= 13) {
    const int64_t axis = NodeAttributes(n).get_int("axis", -1);
    TT_ASSIGN_OR_RETURN(ValueId y, c.emit(op, name, {x}, Attrs{{"axis", axis}}));
    return bind(c, n, y);
  }
  // Before opset 13 softmax works on the input coerced to 2-D at `axis`.
  const int64_t axis = graph::normalize_axis(NodeAttributes(n).get_int("axis", 1), rank);
  if (axis < 0) return invalid_argument("node '" + name + "': softmax axis out of range");
  const Shape flat = {graph::num_elements(Shape(shape.begin(), shape.begin() + axis)),
                      graph::num_elements(Shape(shape.begin() + axis, shape.end()))};
  TT_ASSIGN_OR_RETURN(ValueId f,
                      c.emit(OpKind::kReshape, name + ".2d", {x}, Attrs{{"shape", flat}}));
  TT_ASSIGN_OR_RETURN(ValueId s, c.emit(op, name, {f}, Attrs{{"axis", int64_t{1}}}));
  TT_ASSIGN_OR_RETURN(ValueId y,
                      c.emit(OpKind::kReshape, name + ".nd", {s}, Attrs{{"shape", shape}}));
  return bind(c, n, y);
}

Status reshape(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(auto target, c.int_list_input(n, 1, "shape"));
  const Shape& in = c.graph().type(x).shape;
  const bool allow_zero = NodeAttributes(n).get_int("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allow_zero) {
      if (i >= in.size())
        return invalid_argument("node '" + node_label(n) + "': shape copies dimension " +
                                std::to_string(i) + " the input does not have");
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (infer >= 0)
        return invalid_argument("node '" + node_label(n) + "': more than one -1 in shape");
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      return invalid_argument("node '" + node_label(n) + "': shape has " +
                              std::to_string(target[i]));
    } else {
      known *= target[i];
    }
  }
  if (infer >= 0) target[infer] = known ? graph::num_elements(in) / known : 0;
  return emit_unary(c, n, OpKind::kReshape, Attrs{{"shape", target}});
}

Status slice(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const int64_t rank = c.graph().type(x).shape.size();
  TT_ASSIGN_OR_RETURN(auto starts, list_operand(c, n, 10, "starts", 1, {}));
  TT_ASSIGN_OR_RETURN(auto ends, list_operand(c, n, 10, "ends", 2, {}));
  std::vector<int64_t> default_axes(starts.size());
  for (size_t i = 0; i < default_axes.size(); ++i) default_axes[i] = static_cast<int64_t>(i);
  TT_ASSIGN_OR_RETURN(auto axes, list_operand(c, n, 10, "axes", 3, default_axes));
  TT_ASSIGN_OR_RETURN(auto steps,
                      list_operand(c, n, 10, "steps", 4, std::vector<int64_t>(starts.size(), 1)));
  for (auto& a : axes) {
    const int64_t axis = graph::normalize_axis(a, rank);
    if (axis < 0)
      return invalid_argument("node '" + node_label(n) + "': slice axis " + std::to_string(a) +
                              " out of range");
    a = axis;
  }
  return emit_unary(c, n, OpKind::kSlice,
                    Attrs{{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}});
}

Status squeeze_like(ImportContext& c, const onnx::NodeProto& n, OpKind op) {
  TT_ASSIGN_OR_RETURN(auto axes, list_operand(c, n, 13, "axes", 1, {}));
  return emit_unary(c, n, op, Attrs{{"axes", axes}});
}

Status cast(ImportContext& c, const onnx::NodeProto& n) {
  const int64_t to = NodeAttributes(n).get_int("to", 0);
  const auto dtype = dtype_from_onnx(static_cast<int32_t>(to));
  if (!dtype)
    return unsupported(n, "cast to " + onnx_dtype_name(static_cast<int32_t>(to)) +
                              " (supported: " + kSupportedOnnxDTypes + ")");
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  return emit_cast(c, n, x, *dtype);
}

// CastLike (opset 15): Cast to the dtype of input 1, as ONNX typed it.
Status cast_like(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId like, c.input(n, 1));
  return emit_cast(c, n, x, c.storage_dtype(n.input(1), like));
}

Status constant(ImportContext& c, const onnx::NodeProto& n) {
  NodeAttributes a(n);
  graph::Tensor t;
  if (const auto* v = a.get("value")) {
    auto parsed = tensor_from_proto(v->t());
    if (!parsed) return parsed.error().with_context("node '" + node_label(n) + "'");
    t = in_compute_dtype(std::move(parsed).value());
  } else if (const auto* f = a.get("value_float")) {
    t = graph::Tensor::from_floats({}, {f->f()});
  } else if (const auto* fs = a.get("value_floats")) {
    t = graph::Tensor::from_floats({fs->floats_size()}, {fs->floats().begin(), fs->floats().end()});
  } else if (const auto* i = a.get("value_int")) {
    t = graph::Tensor::from_ints({}, {i->i()});
  } else if (const auto* is = a.get("value_ints")) {
    t = graph::Tensor::from_ints({is->ints_size()}, {is->ints().begin(), is->ints().end()});
  } else {
    return unsupported(n, "only value, value_float(s) and value_int(s) constants are supported");
  }
  return bind(c, n,
              c.graph().add_constant(n.output_size() ? n.output(0) : node_label(n), std::move(t)));
}

Status concat(ImportContext& c, const onnx::NodeProto& n) {
  std::vector<ValueId> in;
  for (int i = 0; i < n.input_size(); ++i) {
    TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, i));
    in.push_back(v);
  }
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kConcat, node_label(n), in,
                                        Attrs{{"axis", NodeAttributes(n).get_int("axis", 0)}}));
  return bind(c, n, y);
}

Status transpose(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const int64_t rank = c.graph().type(x).shape.size();
  std::vector<int64_t> reversed(rank);
  for (int64_t i = 0; i < rank; ++i) reversed[i] = rank - 1 - i;
  return emit_unary(c, n, OpKind::kTranspose,
                    Attrs{{"perm", NodeAttributes(n).get_ints("perm", reversed)}});
}

Status matmul(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId a, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId b, c.input(n, 1));
  // numpy's rule for 1-D operands: a vector is a row (left) or a column (right) for the
  // product, and that axis is dropped from the result.
  const std::string name = node_label(n);
  const Shape as = c.graph().type(a).shape, bs = c.graph().type(b).shape;
  if (as.empty() || bs.empty()) return unsupported(n, "scalar operands");
  if (as.size() == 1) {
    TT_ASSIGN_OR_RETURN(
        a, c.emit(OpKind::kReshape, name + ".row", {a}, Attrs{{"shape", Shape{1, as[0]}}}));
  }
  if (bs.size() == 1) {
    TT_ASSIGN_OR_RETURN(
        b, c.emit(OpKind::kReshape, name + ".column", {b}, Attrs{{"shape", Shape{bs[0], 1}}}));
  }
  const bool squeeze = as.size() == 1 || bs.size() == 1;
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kMatMul, squeeze ? name + ".2d" : name, {a, b}));
  if (squeeze) {
    Shape out = c.graph().type(y).shape;
    if (bs.size() == 1) out.pop_back();
    if (as.size() == 1) out.erase(out.end() - (bs.size() == 1 ? 1 : 2));
    TT_ASSIGN_OR_RETURN(y, c.emit(OpKind::kReshape, name, {y}, Attrs{{"shape", out}}));
  }
  return bind(c, n, y);
}

Status gather(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId i, c.input(n, 1));
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kGather, node_label(n), {x, i},
                                        Attrs{{"axis", NodeAttributes(n).get_int("axis", 0)}}));
  return bind(c, n, y);
}

}  // namespace

const std::map<std::string, Converter>& onnx_converters() {
  static std::map<std::string, Converter> table = {
      {"Conv", conv},
      {"BatchNormalization", batch_norm},
      {"Gemm", gemm},
      {"MatMul", matmul},
      {"Relu",
       [](ImportContext& c, const onnx::NodeProto& n) { return emit_unary(c, n, OpKind::kRelu); }},
      {"Sigmoid", [](ImportContext& c,
                     const onnx::NodeProto& n) { return emit_unary(c, n, OpKind::kSigmoid); }},
      {"HardSigmoid",
       [](ImportContext& c, const onnx::NodeProto& n) {
         NodeAttributes a(n);
         graph::HardSigmoidAttrs attrs;  // ONNX's defaults are the IR's
         if (a.has("alpha")) attrs.alpha = a.get_float("alpha", 0);
         if (a.has("beta")) attrs.beta = a.get_float("beta", 0);
         return emit_unary(c, n, OpKind::kHardSigmoid, graph::to_attrs(attrs));
       }},
      {"HardSwish", [](ImportContext& c,
                       const onnx::NodeProto& n) { return emit_unary(c, n, OpKind::kHardSwish); }},
      {"Clip", clip},
      {"Identity", [](ImportContext& c,
                      const onnx::NodeProto& n) { return emit_unary(c, n, OpKind::kIdentity); }},
      {"Dropout", dropout},
      {"Add",
       [](ImportContext& c, const onnx::NodeProto& n) { return emit_binary(c, n, OpKind::kAdd); }},
      {"Sub", [](ImportContext& c,
                 const onnx::NodeProto& n) { return emit_binary(c, n, OpKind::kSubtract); }},
      {"Mul", [](ImportContext& c,
                 const onnx::NodeProto& n) { return emit_binary(c, n, OpKind::kMultiply); }},
      {"Div", [](ImportContext& c,
                 const onnx::NodeProto& n) { return emit_binary(c, n, OpKind::kDivide); }},

      {"Flatten",
       [](ImportContext& c, const onnx::NodeProto& n) {
         graph::FlattenAttrs attrs;
         attrs.axis = NodeAttributes(n).get_int("axis", attrs.axis);
         return emit_unary(c, n, OpKind::kFlatten, graph::to_attrs(attrs));
       }},
      {"Reshape", reshape},
      {"Transpose", transpose},
      {"Concat", concat},
      {"Softmax",
       [](ImportContext& c, const onnx::NodeProto& n) { return softmax(c, n, OpKind::kSoftmax); }},
      {"LogSoftmax", [](ImportContext& c,
                        const onnx::NodeProto& n) { return softmax(c, n, OpKind::kLogSoftmax); }},
      {"Shape",
       [](ImportContext& c, const onnx::NodeProto& n) {
         NodeAttributes a(n);
         graph::ShapeAttrs attrs;
         attrs.start = a.get_int("start", attrs.start);
         if (a.has("end")) attrs.end = a.get_int("end", 0);
         return emit_unary(c, n, OpKind::kShape, graph::to_attrs(attrs));
       }},
      {"Cast", cast},
      {"CastLike", cast_like},
      {"Slice", slice},
      {"Gather", gather},
      {"Unsqueeze",
       [](ImportContext& c, const onnx::NodeProto& n) {
         return squeeze_like(c, n, OpKind::kUnsqueeze);
       }},
      {"Squeeze", [](ImportContext& c,
                     const onnx::NodeProto& n) { return squeeze_like(c, n, OpKind::kSqueeze); }},
      {"Constant", constant},
  };
  static const bool math_added =
      (add_math_converters(table), add_shape_converters(table), add_index_converters(table),
       add_pool_converters(table), add_integer_converters(table), add_quantize_converters(table),
       add_loop_converters(table), true);
  (void)math_added;
  return table;
}

}  // namespace tensortune::frontend
