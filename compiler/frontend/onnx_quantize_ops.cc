// Converters for ONNX's linear quantization: QuantizeLinear, DequantizeLinear (per tensor or per
// axis), QLinearConv and QLinearMatMul, composed of the graph's exact operators the way ONNX's
// reference computes them:
//   dequantize  y = float32(int32(x) - int32(zero_point)) * scale
//   quantize    y = saturate(round_half_even(x / scale) + zero_point), as the zero point's
//               type (uint8 when it is absent)
//   QLinear*    the integer convolution or matmul of the shifted operands (int32, exact),
//               plus the int32 bias, times (x_scale * w_scale / y_scale), then quantized.
// Bad parameters are refused naming the node and the field: a scale that is zero or not
// float, a zero point that is not 8-bit (32-bit for int32 dequantization), per-axis parameters
// whose length is not the axis's.
#include <cmath>

#include "compiler/frontend/onnx_import_context.h"
#include "compiler/graph/op_attrs.h"

namespace tensortune::frontend {
namespace {

using graph::Attrs;
using graph::DType;
using graph::OpKind;
using graph::Shape;
using graph::ValueId;

Error refuse(const onnx::NodeProto& n, const std::string& field, const std::string& why) {
  return invalid_argument("node '" + node_label(n) + "' (" + n.op_type() + "): " + field + " " +
                          why);
}

Expected<ValueId> cast(ImportContext& c, const std::string& name, ValueId v, DType to) {
  if (c.graph().type(v).dtype == to) return v;
  return c.emit(OpKind::kCast, name, {v}, Attrs{{"to", static_cast<int64_t>(to)}});
}

/// A quantization parameter (input i, named `field`) ready to broadcast against an operand of
/// rank `rank`: a scalar (or one element) as it is; a 1-D one of the length of the operand's
/// axis `axis` reshaped to run along that axis.
Expected<ValueId> parameter(ImportContext& c, const onnx::NodeProto& n, int i,
                            const std::string& field, const Shape& operand, int64_t axis) {
  TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, i));
  const Shape s = c.graph().type(v).shape;
  if (graph::num_elements(s) == 1 && s.size() <= 1) return v;
  const auto rank = static_cast<int64_t>(operand.size());
  if (s.size() != 1)
    return refuse(n, field, "must be a scalar or 1-D, got [" + shape_to_string(s) + "]");
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    return refuse(
        n, "axis",
        "= " + std::to_string(axis) + " is outside the operand's rank " + std::to_string(rank));
  if (s[0] != operand[static_cast<size_t>(axis)])
    return refuse(n, field,
                  "has " + std::to_string(s[0]) + " values, but axis " + std::to_string(axis) +
                      " of the operand [" + shape_to_string(operand) + "] has " +
                      std::to_string(operand[static_cast<size_t>(axis)]));
  Shape along(static_cast<size_t>(rank - axis), 1);
  along[0] = s[0];
  return c.emit(OpKind::kReshape, node_label(n) + "." + field, {v}, Attrs{{"shape", along}});
}

/// A scale (input i): float, and where it is a constant, positive and finite.
Expected<ValueId> scale(ImportContext& c, const onnx::NodeProto& n, int i, const std::string& field,
                        const Shape& operand, int64_t axis) {
  TT_ASSIGN_OR_RETURN(ValueId raw, c.input(n, i));
  if (!graph::is_float(c.graph().type(raw).dtype))
    return refuse(n, field,
                  "must be a float tensor, got " + graph::type_string(c.graph().type(raw)));
  TT_ASSIGN_OR_RETURN(std::optional<graph::Tensor> known, c.try_evaluate(raw));
  if (known)
    for (int64_t k = 0; k < known->size(); ++k)
      if (!(known->at(k) > 0) || !std::isfinite(known->at(k)))
        return refuse(n, field,
                      "[" + std::to_string(k) + "] = " + std::to_string(known->at(k)) +
                          ": a scale must be positive and finite");
  return parameter(c, n, i, field, operand, axis);
}

/// The zero point's dtype (input i), which is the quantized dtype: int8 or uint8 (also int32
/// where `allow_int32`); `fallback` when the input is absent.
Expected<DType> zero_point_dtype(ImportContext& c, const onnx::NodeProto& n, int i,
                                 const std::string& field, DType fallback, bool allow_int32) {
  if (!c.has_input(n, i)) return fallback;
  TT_ASSIGN_OR_RETURN(ValueId zp, c.input(n, i));
  const DType d = c.graph().type(zp).dtype;
  if (d == DType::kInt8 || d == DType::kUInt8 || (allow_int32 && d == DType::kInt32)) return d;
  return refuse(n, field,
                std::string("must be int8 or uint8") + (allow_int32 ? " (or int32)" : "") +
                    ", got " + graph::dtype_name(d));
}

/// int32(x) - int32(zero point), the zero point (input zp) along `axis` of x.
Expected<ValueId> shifted(ImportContext& c, const onnx::NodeProto& n, ValueId x, int zp,
                          const std::string& field, int64_t axis) {
  const std::string name = node_label(n) + "." + field;
  const Shape shape = c.graph().type(x).shape;
  if (graph::is_float(c.graph().type(x).dtype))
    return refuse(n, field,
                  "must be an integer tensor, got " + graph::type_string(c.graph().type(x)));
  TT_ASSIGN_OR_RETURN(ValueId v, cast(c, name + ".int32", x, DType::kInt32));
  if (!c.has_input(n, zp)) return v;
  TT_ASSIGN_OR_RETURN(ValueId z, parameter(c, n, zp, field + "_zero_point", shape, axis));
  TT_ASSIGN_OR_RETURN(z, cast(c, name + ".zero_point_int32", z, DType::kInt32));
  return c.emit(OpKind::kSubtract, name + ".shifted", {v, z});
}

/// saturate(round(real) + zero point) as `to` (int8 or uint8); `real` is float32 already
/// divided by the output scale.
Expected<ValueId> requantized(ImportContext& c, const onnx::NodeProto& n, ValueId real, int zp,
                              int64_t axis, DType to) {
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(ValueId v, c.emit(OpKind::kRound, name + ".round", {real}));
  if (c.has_input(n, zp)) {
    TT_ASSIGN_OR_RETURN(ValueId z,
                        parameter(c, n, zp, "y_zero_point", c.graph().type(real).shape, axis));
    TT_ASSIGN_OR_RETURN(z, cast(c, name + ".zero_point_float", z, DType::kFloat32));
    TT_ASSIGN_OR_RETURN(v, c.emit(OpKind::kAdd, name + ".plus_zero_point", {v, z}));
  }
  graph::ClipAttrs clip;
  clip.min = to == DType::kInt8 ? -128 : 0;
  clip.max = to == DType::kInt8 ? 127 : 255;
  TT_ASSIGN_OR_RETURN(v, c.emit(OpKind::kClip, name + ".saturate", {v}, graph::to_attrs(clip)));
  TT_ASSIGN_OR_RETURN(ValueId q, cast(c, name + ".quantized", v, to));
  c.note_float_twin(q, v);
  return q;
}

Status quantize_linear(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const Shape shape = c.graph().type(x).shape;
  const int64_t axis = NodeAttributes(n).get_int("axis", 1);
  if (!graph::is_float(c.graph().type(x).dtype))
    return refuse(n, "x", "must be a float tensor, got " + graph::type_string(c.graph().type(x)));
  TT_ASSIGN_OR_RETURN(DType to, zero_point_dtype(c, n, 2, "y_zero_point", DType::kUInt8, false));
  TT_ASSIGN_OR_RETURN(ValueId s, scale(c, n, 1, "y_scale", shape, axis));
  TT_ASSIGN_OR_RETURN(x, cast(c, node_label(n) + ".float32", x, DType::kFloat32));
  TT_ASSIGN_OR_RETURN(ValueId real, c.emit(OpKind::kDivide, node_label(n) + ".scaled", {x, s}));
  TT_ASSIGN_OR_RETURN(ValueId y, requantized(c, n, real, 2, axis, to));
  return bind(c, n, y);
}

Status dequantize_linear(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const Shape shape = c.graph().type(x).shape;
  const int64_t axis = NodeAttributes(n).get_int("axis", 1);
  const DType xd = c.graph().type(x).dtype;
  if (xd != DType::kInt8 && xd != DType::kUInt8 && xd != DType::kInt32)
    return refuse(n, "x",
                  std::string("must be int8, uint8 or int32, got ") + graph::dtype_name(xd));
  TT_ASSIGN_OR_RETURN(DType zd, zero_point_dtype(c, n, 2, "x_zero_point", xd, true));
  if (zd != xd)
    return refuse(
        n, "x_zero_point",
        std::string("has dtype ") + graph::dtype_name(zd) + ", x has " + graph::dtype_name(xd));
  TT_ASSIGN_OR_RETURN(ValueId s, scale(c, n, 1, "x_scale", shape, axis));
  ValueId v = graph::kNoValue;
  if (auto twin = c.float_twin(x)) {
    // The integers x holds are already a float value here (a QuantizeLinear of this model):
    // x - zero point in float32 is exact (|values| < 2^24), and stays element-wise float math.
    v = *twin;
    if (c.has_input(n, 2)) {
      TT_ASSIGN_OR_RETURN(ValueId z, parameter(c, n, 2, "x_zero_point", shape, axis));
      TT_ASSIGN_OR_RETURN(z, cast(c, node_label(n) + ".zero_point_float", z, DType::kFloat32));
      TT_ASSIGN_OR_RETURN(v, c.emit(OpKind::kSubtract, node_label(n) + ".shifted", {v, z}));
    }
  } else {
    TT_ASSIGN_OR_RETURN(v, shifted(c, n, x, 2, "x", axis));
    TT_ASSIGN_OR_RETURN(v, cast(c, node_label(n) + ".float32", v, DType::kFloat32));
  }
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kMultiply, node_label(n), {v, s}));
  return bind(c, n, y);
}

/// The integer result `acc` (int32) times a_scale * b_scale / y_scale, requantized.
Status finish_qlinear(ImportContext& c, const onnx::NodeProto& n, ValueId acc, ValueId a_scale,
                      ValueId b_scale, ValueId y_scale, int64_t channel_axis) {
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(DType to, zero_point_dtype(c, n, 7, "y_zero_point", DType::kUInt8, false));
  TT_ASSIGN_OR_RETURN(ValueId m, c.emit(OpKind::kMultiply, name + ".scale_ab", {a_scale, b_scale}));
  TT_ASSIGN_OR_RETURN(m, c.emit(OpKind::kDivide, name + ".multiplier", {m, y_scale}));
  TT_ASSIGN_OR_RETURN(ValueId real, cast(c, name + ".acc_float", acc, DType::kFloat32));
  TT_ASSIGN_OR_RETURN(real, c.emit(OpKind::kMultiply, name + ".real", {real, m}));
  TT_ASSIGN_OR_RETURN(ValueId y, requantized(c, n, real, 7, channel_axis, to));
  return bind(c, n, y);
}

Status qlinear_conv(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x0, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId w0, c.input(n, 3));
  const Shape xs = c.graph().type(x0).shape, ws = c.graph().type(w0).shape;
  if (xs.size() != 4 || ws.size() != 4)
    return unsupported(
        n, "only 2-D QLinearConv is supported (data has rank " + std::to_string(xs.size()) + ")");
  TT_ASSIGN_OR_RETURN(ValueId x, shifted(c, n, x0, 2, "x", 1));
  TT_ASSIGN_OR_RETURN(ValueId w, shifted(c, n, w0, 5, "w", 0));  // per output channel
  TT_ASSIGN_OR_RETURN(graph::Conv2dAttrs attrs, window_attrs(n, xs, ws[2], ws[3]));
  attrs.groups = NodeAttributes(n).get_int("group", attrs.groups);
  TT_ASSIGN_OR_RETURN(ValueId acc, c.emit(OpKind::kConv2dInteger, node_label(n) + ".int32", {x, w},
                                          graph::to_attrs(attrs)));
  const Shape out = c.graph().type(acc).shape;
  if (c.has_input(n, 8)) {
    TT_ASSIGN_OR_RETURN(ValueId b, c.input(n, 8));
    if (c.graph().type(b).dtype != DType::kInt32)
      return refuse(n, "B", "must be int32, got " + graph::type_string(c.graph().type(b)));
    TT_ASSIGN_OR_RETURN(b, parameter(c, n, 8, "B", out, 1));
    TT_ASSIGN_OR_RETURN(acc, c.emit(OpKind::kAdd, node_label(n) + ".bias", {acc, b}));
  }
  TT_ASSIGN_OR_RETURN(ValueId xs_, scale(c, n, 1, "x_scale", out, 1));
  TT_ASSIGN_OR_RETURN(ValueId ws_, scale(c, n, 4, "w_scale", out, 1));  // per output channel
  TT_ASSIGN_OR_RETURN(ValueId ys_, scale(c, n, 6, "y_scale", out, 1));
  return finish_qlinear(c, n, acc, xs_, ws_, ys_, 1);
}

Status qlinear_matmul(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId a0, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId b0, c.input(n, 3));
  const int64_t ra = c.graph().type(a0).shape.size(), rb = c.graph().type(b0).shape.size();
  if (ra < 2 || rb < 2) return unsupported(n, "QLinearMatMul of 1-D operands");
  // A's parameters run down its rows (axis -2), B's along its columns (the last axis).
  TT_ASSIGN_OR_RETURN(ValueId a, shifted(c, n, a0, 2, "a", -2));
  TT_ASSIGN_OR_RETURN(ValueId b, shifted(c, n, b0, 5, "b", -1));
  TT_ASSIGN_OR_RETURN(ValueId acc,
                      c.emit(OpKind::kMatMulInteger, node_label(n) + ".int32", {a, b}));
  const Shape out = c.graph().type(acc).shape;
  TT_ASSIGN_OR_RETURN(ValueId as_, scale(c, n, 1, "a_scale", c.graph().type(a0).shape, -2));
  TT_ASSIGN_OR_RETURN(ValueId bs_, scale(c, n, 4, "b_scale", c.graph().type(b0).shape, -1));
  TT_ASSIGN_OR_RETURN(ValueId ys_, scale(c, n, 6, "y_scale", out, -1));
  return finish_qlinear(c, n, acc, as_, bs_, ys_, -1);
}

}  // namespace

void add_quantize_converters(std::map<std::string, Converter>& t) {
  t["QuantizeLinear"] = quantize_linear;
  t["DequantizeLinear"] = dequantize_linear;
  t["QLinearConv"] = qlinear_conv;
  t["QLinearMatMul"] = qlinear_matmul;
}

}  // namespace tensortune::frontend
