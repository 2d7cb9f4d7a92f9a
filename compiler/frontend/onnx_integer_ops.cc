// Converters for ONNX's integer convolution and matmul (ConvInteger, MatMulInteger; opset 10):
// the operands are widened to int32, their zero points subtracted (scalars, or per output
// channel for the weight, per row of A and per column of B), and conv2d_integer or
// matmul_integer sums the products exactly. Padding then counts as the zero point, as ONNX's
// reference pads the shifted input with 0.
#include "compiler/frontend/onnx_import_context.h"
#include "compiler/graph/op_attrs.h"

namespace tensortune::frontend {
namespace {

using graph::Attrs;
using graph::OpKind;
using graph::Shape;
using graph::ValueId;

Expected<ValueId> to_int32(ImportContext& c, const std::string& name, ValueId v) {
  return c.emit(OpKind::kCast, name, {v},
                Attrs{{"to", static_cast<int64_t>(graph::DType::kInt32)}});
}

// Input i less its zero point (input zp_input when given), as int32. A 1-D zero point of
// `along` values is reshaped to broadcast along axis `axis` of a rank-`rank` operand.
Expected<ValueId> shifted(ImportContext& c, const onnx::NodeProto& n, int i, int zp_input,
                          int64_t axis, int64_t rank, const std::string& what) {
  const std::string name = node_label(n) + "." + what;
  TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, i));
  if (graph::is_float(c.graph().type(v).dtype))
    return invalid_argument("node '" + node_label(n) + "' (" + n.op_type() + "): " + what +
                            " must be an integer tensor, got " +
                            graph::type_string(c.graph().type(v)));
  TT_ASSIGN_OR_RETURN(v, to_int32(c, name + ".int32", v));
  if (!c.has_input(n, zp_input)) return v;
  TT_ASSIGN_OR_RETURN(ValueId zp, c.input(n, zp_input));
  const Shape zs = c.graph().type(zp).shape;
  if (graph::num_elements(zs) != 1) {
    if (zs.size() != 1)
      return invalid_argument("node '" + node_label(n) + "': the zero point of " + what +
                              " must be a scalar or 1-D, got [" + shape_to_string(zs) + "]");
    Shape along(static_cast<size_t>(rank - axis), 1);
    along[0] = zs[0];
    TT_ASSIGN_OR_RETURN(
        zp, c.emit(OpKind::kReshape, name + ".zero_point", {zp}, Attrs{{"shape", along}}));
  }
  TT_ASSIGN_OR_RETURN(zp, to_int32(c, name + ".zero_point_int32", zp));
  return c.emit(OpKind::kSubtract, name + ".shifted", {v, zp});
}

Status conv_integer(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x0, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId w0, c.input(n, 1));
  const Shape xs = c.graph().type(x0).shape, ws = c.graph().type(w0).shape;
  if (xs.size() != 4 || ws.size() != 4)
    return unsupported(
        n, "only 2-D ConvInteger is supported (data has rank " + std::to_string(xs.size()) + ")");
  TT_ASSIGN_OR_RETURN(ValueId x, shifted(c, n, 0, 2, 0, 4, "x"));
  TT_ASSIGN_OR_RETURN(ValueId w, shifted(c, n, 1, 3, 0, 4, "w"));  // per output channel
  TT_ASSIGN_OR_RETURN(graph::Conv2dAttrs attrs, window_attrs(n, xs, ws[2], ws[3]));
  attrs.groups = NodeAttributes(n).get_int("group", attrs.groups);
  TT_ASSIGN_OR_RETURN(
      ValueId y, c.emit(OpKind::kConv2dInteger, node_label(n), {x, w}, graph::to_attrs(attrs)));
  return bind(c, n, y);
}

Status matmul_integer(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId a0, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId b0, c.input(n, 1));
  const int64_t ra = c.graph().type(a0).shape.size(), rb = c.graph().type(b0).shape.size();
  if (ra < 2 || rb < 2) return unsupported(n, "MatMulInteger of 1-D operands");
  // A's zero point runs down its rows (axis -2), B's along its columns (the last axis).
  TT_ASSIGN_OR_RETURN(ValueId a, shifted(c, n, 0, 2, ra - 2, ra, "a"));
  TT_ASSIGN_OR_RETURN(ValueId b, shifted(c, n, 1, 3, rb - 1, rb, "b"));
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kMatMulInteger, node_label(n), {a, b}));
  return bind(c, n, y);
}

}  // namespace

void add_integer_converters(std::map<std::string, Converter>& t) {
  t["ConvInteger"] = conv_integer;
  t["MatMulInteger"] = matmul_integer;
}

}  // namespace tensortune::frontend
