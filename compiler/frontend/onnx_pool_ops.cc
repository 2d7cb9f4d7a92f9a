// Converters for pooling in 1, 2 and 3 spatial dimensions. The IR pools in 2-D (NCHW); the
// others are 2-D pools of reshaped data:
//   1-D [N, C, L]        -> [N, C, 1, L], a 1 x k window;
//   3-D [N, C, D, H, W]  -> pool (H, W) of [N, C*D, H, W], then pool D of [N, C, D, OH*OW] with a
//                           k x 1 window.
// A 3-D box is the product of its axes' windows, so a max over it is a max of maxima, and an
// average (counting padding or not) an average of averages: every window of one axis counts the
// same number of cells of the others.
// MaxPool of 8- and 16-bit integers pools their float32 values (exact) and casts back.
#include "compiler/frontend/onnx_import_context.h"
#include "compiler/graph/op_attrs.h"
#include "schedule_space/workload.h"

namespace tensortune::frontend {
namespace {

using graph::Attrs;
using graph::OpKind;
using graph::Shape;
using graph::ValueId;

// One spatial axis of a pooling window.
struct Axis {
  int64_t kernel = 1, stride = 1, pad_begin = 0, pad_end = 0, dilation = 1;
};

// The window's axes from kernel_shape, strides, pads (or auto_pad) and dilations.
Expected<std::vector<Axis>> window_axes(const onnx::NodeProto& n, const Shape& spatial) {
  NodeAttributes a(n);
  const size_t d = spatial.size();
  const auto kernel = a.get_ints("kernel_shape", {});
  const auto strides = a.get_ints("strides", std::vector<int64_t>(d, 1));
  const auto dilations = a.get_ints("dilations", std::vector<int64_t>(d, 1));
  const std::string what = "node '" + node_label(n) + "' (" + n.op_type() + "): ";
  if (kernel.size() != d || strides.size() != d || dilations.size() != d)
    return invalid_argument(what + "kernel_shape, strides and dilations need " + std::to_string(d) +
                            " values each for data with " + std::to_string(d) + " spatial axes");
  const std::string mode = a.get_string("auto_pad", "NOTSET");
  auto pads = a.get_ints("pads", std::vector<int64_t>(2 * d, 0));
  if (mode == "NOTSET" && pads.size() != 2 * d)
    return invalid_argument(what + "pads needs " + std::to_string(2 * d) + " values, got " +
                            std::to_string(pads.size()));
  std::vector<Axis> axes(d);
  for (size_t i = 0; i < d; ++i) {
    Axis& x = axes[i];
    x.kernel = kernel[i], x.stride = strides[i], x.dilation = dilations[i];
    if (x.kernel < 1 || x.stride < 1 || x.dilation < 1)
      return invalid_argument(what + "kernel_shape, strides and dilations must be >= 1");
    if (mode == "NOTSET") {
      x.pad_begin = pads[i], x.pad_end = pads[i + d];
    } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      const auto p =
          schedule_space::auto_pad(mode == "SAME_UPPER" ? schedule_space::AutoPad::kSameUpper
                                                        : schedule_space::AutoPad::kSameLower,
                                   spatial[i], x.kernel, x.stride, x.dilation);
      x.pad_begin = p.begin, x.pad_end = p.end;
    } else if (mode != "VALID") {
      return invalid_argument(what + "auto_pad '" + mode +
                              "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    }
  }
  return axes;
}

Expected<ValueId> reshape(ImportContext& c, const std::string& name, ValueId x, Shape shape) {
  return c.emit(OpKind::kReshape, name, {x}, Attrs{{"shape", std::move(shape)}});
}

// A 2-D pool of 4-D data over axes 2 (h) and 3 (w).
Expected<ValueId> pool2d(ImportContext& c, const std::string& name, OpKind op, ValueId x,
                         const Axis& h, const Axis& w, const graph::Pool2dAttrs& base) {
  graph::Pool2dAttrs attrs = base;
  attrs.kernel = {h.kernel, w.kernel};
  attrs.strides = {h.stride, w.stride};
  attrs.pads = {h.pad_begin, w.pad_begin, h.pad_end, w.pad_end};
  attrs.dilations = {h.dilation, w.dilation};
  return c.emit(op, name, {x}, graph::to_attrs(attrs));
}

Status pool(ImportContext& c, const onnx::NodeProto& n, OpKind op) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const Shape xs = c.graph().type(x).shape;
  const graph::DType dtype = c.graph().type(x).dtype;
  const std::string name = node_label(n);
  NodeAttributes a(n);
  if (xs.size() < 3 || xs.size() > 5)
    return unsupported(n, "pooling of rank-" + std::to_string(xs.size()) +
                              " data (1-D, 2-D and 3-D pooling are supported)");
  // Small integers: their float32 values pooled, exactly, then cast back.
  const bool integer = !graph::is_float(dtype);
  if (integer && (op != OpKind::kMaxPool2d || graph::element_size(dtype) > 2))
    return unsupported(n, std::string("pooling of ") + graph::dtype_name(dtype) +
                              " data (float, and MaxPool of 8- and 16-bit integers)");
  if (integer) {
    TT_ASSIGN_OR_RETURN(x, c.emit(OpKind::kCast, name + ".to_float32", {x},
                                  Attrs{{"to", static_cast<int64_t>(graph::DType::kFloat32)}}));
  }
  const bool indices_wanted = n.output_size() > 1 && !n.output(1).empty();
  if (indices_wanted && (op != OpKind::kMaxPool2d || xs.size() != 4))
    return unsupported(n, "output 1 (Indices) of a pool other than a 2-D MaxPool");

  const int64_t N = xs[0], C = xs[1];
  ValueId y;
  if (op == OpKind::kGlobalAvgPool2d && xs.size() == 4) {
    TT_ASSIGN_OR_RETURN(y, c.emit(op, name, {x}));
  } else if (op == OpKind::kGlobalAvgPool2d) {
    // Other ranks: the spatial axes as one, averaged; then a 1 for each.
    const int64_t spatial = graph::num_elements(Shape(xs.begin() + 2, xs.end()));
    TT_ASSIGN_OR_RETURN(ValueId flat, reshape(c, name + ".4d", x, {N, C, 1, spatial}));
    TT_ASSIGN_OR_RETURN(y, c.emit(op, name, {flat}));
    Shape ones(xs.size(), 1);
    ones[0] = N, ones[1] = C;
    TT_ASSIGN_OR_RETURN(y, reshape(c, name + ".nd", y, ones));
  } else {
    TT_ASSIGN_OR_RETURN(auto axes, window_axes(n, Shape(xs.begin() + 2, xs.end())));
    graph::Pool2dAttrs base;
    base.ceil_mode = a.get_int("ceil_mode", 0);
    if (op == OpKind::kAvgPool2d) base.count_include_pad = a.get_int("count_include_pad", 0);
    if (xs.size() == 4) {
      TT_ASSIGN_OR_RETURN(y, pool2d(c, name, op, x, axes[0], axes[1], base));
      if (indices_wanted) {
        graph::Pool2dAttrs order = base;
        order.storage_order = a.get_int("storage_order", 0);
        TT_ASSIGN_OR_RETURN(ValueId at, pool2d(c, name + ".indices", OpKind::kMaxPool2dIndices, x,
                                               axes[0], axes[1], order));
        c.bind(n.output(1), at);
      }
    } else if (xs.size() == 3) {
      TT_ASSIGN_OR_RETURN(ValueId x4, reshape(c, name + ".4d", x, {N, C, 1, xs[2]}));
      TT_ASSIGN_OR_RETURN(y, pool2d(c, name + ".pool", op, x4, Axis{}, axes[0], base));
      const Shape& ys = c.graph().type(y).shape;
      TT_ASSIGN_OR_RETURN(y, reshape(c, name, y, {N, C, ys[3]}));
    } else {
      const int64_t D = xs[2], H = xs[3], W = xs[4];
      TT_ASSIGN_OR_RETURN(ValueId hw, reshape(c, name + ".hw", x, {N, C * D, H, W}));
      TT_ASSIGN_OR_RETURN(hw, pool2d(c, name + ".pool_hw", op, hw, axes[1], axes[2], base));
      const int64_t OH = c.graph().type(hw).shape[2], OW = c.graph().type(hw).shape[3];
      TT_ASSIGN_OR_RETURN(ValueId d, reshape(c, name + ".d", hw, {N, C, D, OH * OW}));
      TT_ASSIGN_OR_RETURN(d, pool2d(c, name + ".pool_d", op, d, axes[0], Axis{}, base));
      const int64_t OD = c.graph().type(d).shape[2];
      TT_ASSIGN_OR_RETURN(y, reshape(c, name, d, {N, C, OD, OH, OW}));
    }
  }
  if (integer) {
    TT_ASSIGN_OR_RETURN(y, c.emit(OpKind::kCast, name + ".to_" + graph::dtype_name(dtype), {y},
                                  Attrs{{"to", static_cast<int64_t>(dtype)}}));
  }
  c.bind(n.output(0), y);
  return ok_status();
}

}  // namespace

void add_pool_converters(std::map<std::string, Converter>& t) {
  t["MaxPool"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return pool(c, n, OpKind::kMaxPool2d);
  };
  t["AveragePool"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return pool(c, n, OpKind::kAvgPool2d);
  };
  t["GlobalAveragePool"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return pool(c, n, OpKind::kGlobalAvgPool2d);
  };
}

}  // namespace tensortune::frontend
