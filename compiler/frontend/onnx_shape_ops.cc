// Converters for the operators that move or generate data rather than compute on it: Pad,
// Resize/Upsample, ConvTranspose, Expand, Tile, Split, DepthToSpace and
// SpaceToDepth, and the constants of fixed shapes (ConstantOfShape, Range, Size). Each maps the
// operator's opset-dependent form (attribute or input) onto the IR's resolved attributes;
// anything else is refused naming the node and what.
#include <cmath>
#include <cstring>
#include <numeric>

#include "compiler/frontend/onnx_import_context.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::frontend {
namespace {

using graph::Attrs;
using graph::OpKind;
using graph::Shape;
using graph::ValueId;

Status pad(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const int64_t rank = c.graph().type(x).shape.size();
  NodeAttributes a(n);
  graph::PadAttrs attrs;
  const std::string mode = a.get_string("mode", "constant");
  if (mode == "constant")
    attrs.mode = 0;
  else if (mode == "reflect")
    attrs.mode = 1;
  else if (mode == "edge")
    attrs.mode = 2;
  else
    return unsupported(n, "attribute mode='" + mode + "' (constant, reflect or edge)");
  std::vector<int64_t> pads;
  if (c.opset() < 11) {
    pads = a.get_ints("pads", {});
    attrs.value = a.get_float("value", 0);
  } else {
    TT_ASSIGN_OR_RETURN(pads, c.int_list_input(n, 1, "pads"));
    if (c.has_input(n, 2)) {
      TT_ASSIGN_OR_RETURN(const graph::Tensor* v, c.constant_input(n, 2, "constant_value"));
      if (v->size() != 1)
        return invalid_argument("node '" + node_label(n) + "': constant_value must be a scalar");
      attrs.value = v->at(0);
    }
  }
  if (c.has_input(n, 3)) {  // opset 18: the axes the pads are for
    TT_ASSIGN_OR_RETURN(auto axes, c.int_list_input(n, 3, "axes"));
    if (pads.size() != 2 * axes.size())
      return invalid_argument("node '" + node_label(n) + "': " + std::to_string(pads.size()) +
                              " pads for " + std::to_string(axes.size()) + " axes");
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t axis = graph::normalize_axis(axes[i], rank);
      if (axis < 0)
        return invalid_argument("node '" + node_label(n) + "': pad axis " +
                                std::to_string(axes[i]) + " is out of range");
      full[axis] = pads[i];
      full[axis + rank] = pads[i + axes.size()];
    }
    pads = full;
  }
  attrs.pads = pads;
  return emit_unary(c, n, OpKind::kPad, graph::to_attrs(attrs));
}

Status expand(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(auto shape, c.int_list_input(n, 1, "shape"));
  return emit_unary(c, n, OpKind::kExpand, Attrs{{"shape", shape}});
}

Status tile(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(auto repeats, c.int_list_input(n, 1, "repeats"));
  return emit_unary(c, n, OpKind::kTile, Attrs{{"repeats", repeats}});
}

// Size: the element count, a constant once shapes are fixed.
Status size(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const int64_t count = graph::num_elements(c.graph().type(x).shape);
  return bind(c, n, c.graph().add_constant(n.output(0), graph::Tensor::from_ints({}, {count})));
}

// A constant tensor of the given shape filled with `value`'s one element (float 0 by default).
Status constant_of_shape(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(auto shape, c.int_list_input(n, 0, "shape"));
  graph::Tensor fill = graph::Tensor::from_floats({1}, {0.0f});
  if (const auto* v = NodeAttributes(n).get("value")) {
    auto parsed = tensor_from_proto(v->t());
    if (!parsed) return parsed.error().with_context("node '" + node_label(n) + "'");
    fill = in_compute_dtype(std::move(parsed).value());
    if (fill.size() != 1)
      return invalid_argument("node '" + node_label(n) + "': value must hold one element");
  }
  if (checked_num_elements(shape) < 0)
    return invalid_argument("node '" + node_label(n) + "': shape [" + shape_to_string(shape) +
                            "] is negative or too large");
  graph::Tensor t = graph::Tensor::zeros(fill.dtype, shape);
  if (graph::is_float(t.dtype))
    std::fill(t.f32.begin(), t.f32.end(), fill.f32[0]);
  else
    std::fill(t.i64.begin(), t.i64.end(), fill.i64[0]);
  return bind(c, n, c.graph().add_constant(n.output(0), std::move(t)));
}

// Range of constant operands, as a constant: ceil((limit - start) / delta) elements.
Status range(ImportContext& c, const onnx::NodeProto& n) {
  const graph::Tensor* operand[3];
  for (int i = 0; i < 3; ++i) {
    TT_ASSIGN_OR_RETURN(operand[i], c.constant_input(n, i,
                                                     i == 0   ? "start"
                                                     : i == 1 ? "limit"
                                                              : "delta"));
    if (operand[i]->size() != 1)
      return invalid_argument("node '" + node_label(n) + "': range operands must be scalars");
  }
  const double start = operand[0]->at(0), limit = operand[1]->at(0), delta = operand[2]->at(0);
  if (delta == 0) return invalid_argument("node '" + node_label(n) + "': range delta is 0");
  const double count_d = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count_d < double(kMaxTensorElements)))
    return invalid_argument("node '" + node_label(n) + "': range is too long");
  const auto count = static_cast<int64_t>(count_d);
  graph::Tensor t = graph::Tensor::zeros(operand[0]->dtype, {count});
  for (int64_t i = 0; i < count; ++i) {
    if (graph::is_float(t.dtype))
      t.f32[i] = static_cast<float>(start + i * delta);
    else
      t.i64[i] = static_cast<int64_t>(operand[0]->i64[0] + i * operand[2]->i64[0]);
  }
  return bind(c, n, c.graph().add_constant(n.output(0), std::move(t)));
}

// Split: one slice per output (sizes from the attribute before opset 13, the input after, or
// equal parts; opset 18's num_outputs gives ceil-sized parts).
Status split(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const Shape shape = c.graph().type(x).shape;
  NodeAttributes a(n);
  const int64_t axis = graph::normalize_axis(a.get_int("axis", 0), shape.size());
  if (axis < 0) return invalid_argument("node '" + node_label(n) + "': split axis is out of range");
  TT_ASSIGN_OR_RETURN(auto sizes, list_operand(c, n, 13, "split", 1, {}));
  const int64_t outputs = n.output_size();
  if (sizes.empty()) {
    const int64_t parts = a.get_int("num_outputs", outputs);
    if (parts < 1) return invalid_argument("node '" + node_label(n) + "' has no outputs");
    const int64_t each = (shape[axis] + parts - 1) / parts;
    for (int64_t p = 0, left = shape[axis]; p < parts; ++p, left -= each)
      sizes.push_back(std::max<int64_t>(std::min(each, left), 0));
  }
  if (static_cast<int64_t>(sizes.size()) != outputs ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != shape[axis])
    return invalid_argument("node '" + node_label(n) + "': split sizes do not add up to axis " +
                            std::to_string(axis) + " of [" + shape_to_string(shape) + "] over " +
                            std::to_string(outputs) + " outputs");
  int64_t begin = 0;
  for (int64_t i = 0; i < outputs; ++i) {
    graph::SliceAttrs s{{begin}, {begin + sizes[i]}, {axis}, {1}};
    begin += sizes[i];
    if (n.output(i).empty()) continue;
    TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kSlice, node_label(n) + "." + std::to_string(i),
                                          {x}, graph::to_attrs(s)));
    c.bind(n.output(i), y);
  }
  return ok_status();
}

// DepthToSpace and SpaceToDepth as reshape, transpose, reshape.
Status depth_space(ImportContext& c, const onnx::NodeProto& n, bool to_space) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const Shape s = c.graph().type(x).shape;
  NodeAttributes a(n);
  const int64_t b = a.get_int("blocksize", 0);
  if (s.size() != 4 || b < 1)
    return invalid_argument("node '" + node_label(n) + "': needs NCHW data and blocksize >= 1");
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  Shape split, out;
  std::vector<int64_t> perm;
  if (to_space) {
    if (C % (b * b) != 0)
      return invalid_argument("node '" + node_label(n) + "': channels " + std::to_string(C) +
                              " are not a multiple of blocksize^2");
    const std::string mode = a.get_string("mode", "DCR");
    if (mode == "DCR") {
      split = {N, b, b, C / (b * b), H, W};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (mode == "CRD") {
      split = {N, C / (b * b), b, b, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      return unsupported(n, "attribute mode='" + mode + "' (DCR or CRD)");
    }
    out = {N, C / (b * b), H * b, W * b};
  } else {
    if (H % b != 0 || W % b != 0)
      return invalid_argument("node '" + node_label(n) + "': spatial size is not a multiple of " +
                              "blocksize");
    split = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {N, C * b * b, H / b, W / b};
  }
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(ValueId r,
                      c.emit(OpKind::kReshape, name + ".split", {x}, Attrs{{"shape", split}}));
  TT_ASSIGN_OR_RETURN(ValueId t,
                      c.emit(OpKind::kTranspose, name + ".perm", {r}, Attrs{{"perm", perm}}));
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kReshape, name, {t}, Attrs{{"shape", out}}));
  return bind(c, n, y);
}

// ConvTranspose (2-D): pads resolved from pads, auto_pad or output_shape as ONNX states.
Status conv_transpose(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId w, c.input(n, 1));
  const Shape xs = c.graph().type(x).shape, ws = c.graph().type(w).shape;
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size())
    return unsupported(n, "ConvTranspose of rank-" + std::to_string(xs.size()) +
                              " data (1-D, 2-D and 3-D are supported)");
  const size_t d = xs.size() - 2;
  NodeAttributes a(n);
  graph::Conv2dTransposeAttrs t;
  const std::vector<int64_t> ones(d, 1), zeros(d, 0);
  t.strides = a.get_ints("strides", ones);
  t.dilations = a.get_ints("dilations", ones);
  t.output_padding = a.get_ints("output_padding", zeros);
  t.groups = a.get_int("group", 1);
  if (t.strides.size() != d || t.dilations.size() != d || t.output_padding.size() != d)
    return invalid_argument("node '" + node_label(n) +
                            "': strides, dilations and output_padding need " + std::to_string(d) +
                            " values");
  const std::string mode = a.get_string("auto_pad", "NOTSET");
  std::vector<int64_t> output_shape = a.get_ints("output_shape", {});
  if (output_shape.size() > d) output_shape.erase(output_shape.begin(), output_shape.end() - d);
  if (output_shape.empty() && (mode == "SAME_UPPER" || mode == "SAME_LOWER"))
    for (size_t i = 0; i < d; ++i) output_shape.push_back(xs[2 + i] * t.strides[i]);
  if (!output_shape.empty()) {
    if (output_shape.size() != d)
      return invalid_argument("node '" + node_label(n) + "': output_shape needs " +
                              std::to_string(d) + " values");
    t.pads.assign(2 * d, 0);
    for (size_t i = 0; i < d; ++i) {
      const int64_t total = t.strides[i] * (xs[2 + i] - 1) + t.output_padding[i] +
                            (ws[2 + i] - 1) * t.dilations[i] + 1 - output_shape[i];
      const bool upper = mode == "SAME_UPPER";
      // total may be negative (the output grows): halves round down, as ONNX's reference does.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      t.pads[i] = upper ? half : total - half;
      t.pads[i + d] = total - t.pads[i];
    }
  } else if (mode == "NOTSET" || mode == "VALID") {
    t.pads = mode == "VALID" ? std::vector<int64_t>(2 * d, 0)
                             : a.get_ints("pads", std::vector<int64_t>(2 * d, 0));
    if (t.pads.size() != 2 * d)
      return invalid_argument("node '" + node_label(n) + "': pads needs " + std::to_string(2 * d) +
                              " values");
  } else {
    return unsupported(n, "attribute auto_pad='" + mode + "'");
  }
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(ValueId y,
                      c.emit(OpKind::kConv2dTranspose, name, {x, w}, graph::to_attrs(t)));
  if (c.has_input(n, 2)) {
    TT_ASSIGN_OR_RETURN(ValueId b, c.input(n, 2));
    TT_ASSIGN_OR_RETURN(y, c.emit(OpKind::kBiasAdd, name + ".bias", {y, b},
                                  graph::to_attrs(graph::BiasAddAttrs{1})));
  }
  return bind(c, n, y);
}

// Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample (scales as an
// attribute before opset 9, an input from it): resolved to output sizes and per-axis scales.
Status resize(ImportContext& c, const onnx::NodeProto& n, bool upsample) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  const Shape xs = c.graph().type(x).shape;
  const int64_t rank = xs.size();
  NodeAttributes a(n);
  graph::ResizeAttrs r;
  const std::string mode = a.get_string("mode", "nearest");
  if (mode == "nearest")
    r.mode = 0;
  else if (mode == "linear" || mode == "bilinear")
    r.mode = 1;
  else if (mode == "cubic" && !upsample)
    r.mode = 2;
  else
    return unsupported(n, "attribute mode='" + mode + "'");
  const bool legacy = upsample || c.opset() < 11;  // asymmetric coordinates, floor for nearest
  const std::string coord =
      legacy ? "asymmetric" : a.get_string("coordinate_transformation_mode", "half_pixel");
  const char* const coords[] = {"half_pixel",         "asymmetric",           "align_corners",
                                "pytorch_half_pixel", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  r.coord = -1;
  for (int i = 0; i < 6; ++i)
    if (coord == coords[i]) r.coord = i;
  if (r.coord < 0)
    return unsupported(n, "attribute coordinate_transformation_mode='" + coord + "'");
  const std::string nearest = legacy ? "floor" : a.get_string("nearest_mode", "round_prefer_floor");
  const char* const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  r.nearest = -1;
  for (int i = 0; i < 4; ++i)
    if (nearest == nearests[i]) r.nearest = i;
  if (r.nearest < 0) return unsupported(n, "attribute nearest_mode='" + nearest + "'");
  r.exclude_outside = a.get_int("exclude_outside", 0);
  if (a.has("cubic_coeff_a")) r.cubic_coeff_a = a.get_float("cubic_coeff_a", 0);
  if (a.get_int("antialias", 0)) return unsupported(n, "attribute antialias=1");
  if (a.has("axes")) return unsupported(n, "attribute axes");
  if (a.get_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    return unsupported(n, "attribute keep_aspect_ratio_policy");

  std::vector<float> scales;
  std::vector<int64_t> sizes;
  if (upsample && c.opset() < 9) {
    for (float f : NodeAttributes(n).get("scales")
                       ? std::vector<float>(a.get("scales")->floats().begin(),
                                            a.get("scales")->floats().end())
                       : std::vector<float>{})
      scales.push_back(f);
  } else {
    const int scales_input = upsample || c.opset() < 11 ? 1 : 2;
    if (c.has_input(n, scales_input)) {
      TT_ASSIGN_OR_RETURN(const graph::Tensor* t, c.constant_input(n, scales_input, "scales"));
      if (t->size() > 0) {
        if (!graph::is_float(t->dtype))
          return invalid_argument("node '" + node_label(n) + "': scales must be float");
        scales = t->f32;
      }
    }
    if (!upsample && c.opset() >= 11 && c.has_input(n, 3)) {
      TT_ASSIGN_OR_RETURN(sizes, c.int_list_input(n, 3, "sizes"));
    }
  }
  if (scales.empty() == sizes.empty())
    return invalid_argument("node '" + node_label(n) + "': give exactly one of scales and sizes");
  if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != rank)
      return invalid_argument("node '" + node_label(n) + "': sizes has " +
                              std::to_string(sizes.size()) + " values for rank " +
                              std::to_string(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (sizes[d] < 1 || xs[d] < 1)
        return invalid_argument("node '" + node_label(n) + "': sizes [" + shape_to_string(sizes) +
                                "] has an empty axis");
      scales.push_back(static_cast<float>(double(sizes[d]) / double(xs[d])));
    }
  } else {
    if (static_cast<int64_t>(scales.size()) != rank)
      return invalid_argument("node '" + node_label(n) + "': scales has " +
                              std::to_string(scales.size()) + " values for rank " +
                              std::to_string(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (!(scales[d] > 0) || !(double(xs[d]) * scales[d] < double(kMaxTensorElements)))
        return invalid_argument("node '" + node_label(n) + "': scale " + std::to_string(scales[d]) +
                                " on axis " + std::to_string(d));
      sizes.push_back(static_cast<int64_t>(std::floor(double(xs[d]) * scales[d])));
    }
  }
  r.sizes = sizes;
  auto bits_of = [](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<int64_t>(bits);
  };
  for (float s : scales) r.scale_bits.push_back(bits_of(s));
  if (r.coord == 5) {  // tf_crop_and_resize: the region of interest, input 1
    if (!c.has_input(n, 1))
      return invalid_argument("node '" + node_label(n) +
                              "': tf_crop_and_resize needs the roi input");
    TT_ASSIGN_OR_RETURN(const graph::Tensor* roi, c.constant_input(n, 1, "roi"));
    if (!graph::is_float(roi->dtype) || roi->size() != 2 * rank)
      return invalid_argument("node '" + node_label(n) + "': roi must hold " +
                              std::to_string(2 * rank) + " floats (every start, then every end)");
    for (float v : roi->f32) r.roi_bits.push_back(bits_of(v));
    r.extrapolation_value = a.get_float("extrapolation_value", 0.0f);
  }
  return emit_unary(c, n, OpKind::kResize, graph::to_attrs(r));
}

}  // namespace

void add_shape_converters(std::map<std::string, Converter>& t) {
  t["Size"] = size;
  t["Pad"] = pad;
  t["Resize"] = [](ImportContext& c, const onnx::NodeProto& n) { return resize(c, n, false); };
  t["Upsample"] = [](ImportContext& c, const onnx::NodeProto& n) { return resize(c, n, true); };
  t["ConvTranspose"] = conv_transpose;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["ConstantOfShape"] = constant_of_shape;
  t["Range"] = range;
  t["Split"] = split;
  t["DepthToSpace"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return depth_space(c, n, true);
  };
  t["SpaceToDepth"] = [](ImportContext& c, const onnx::NodeProto& n) {
    return depth_space(c, n, false);
  };
}

}  // namespace tensortune::frontend
