// The operators of imported models beyond the zoo's, mapped to ONNX (opset 17) for the
// exporter: element-wise math, comparisons and logic, Where, Cast, the reductions,
// ArgMax/ArgMin, the gathers and ScatterND, Slice, Squeeze/Unsqueeze, Expand, Tile, Pad,
// LogSoftmax, instance and layer normalisation, ConvTranspose, Resize, TopK.
#include "compiler/frontend/onnx_export_ops.h"

#include <cstring>
#include <map>

#include "compiler/graph/op_attrs.h"

namespace tensortune::frontend {

using graph::Node;
using graph::OpKind;

namespace {

// An int64 initializer named after the node, appended as its next input.
void add_ints_input(ExportSink& sink, onnx::NodeProto* p, const Node& n, const std::string& what,
                    const std::vector<int64_t>& v) {
  p->add_input(sink.initializer(sink.names[n.output] + "." + what,
                                graph::Tensor::from_ints({int64_t(v.size())}, v)));
}

// ScatterND's reduction is a string attribute in ONNX, a code in ours.
void export_scatter_nd(const Node& n, ExportSink& sink) {
  const int64_t r = graph::attrs_as<graph::ScatterNDAttrs>(n.attrs).reduction;
  add_string(sink.emit(n, "ScatterND"), "reduction", r == 1 ? "add" : r == 2 ? "mul" : "none");
}

std::vector<float> floats_of_bits(const graph::Ints& bits) {
  std::vector<float> v;
  for (int64_t b : bits) {
    const auto u = static_cast<uint32_t>(b);
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);
  }
  return v;
}

// Resize(X, roi, scales): our resolved per-axis scales (their float bits), from which an
// importer derives the same sizes (floor(in * scale)) and the same coordinates. false for modes
// outside ONNX's.
bool export_resize(const Node& n, ExportSink& sink) {
  const auto a = graph::attrs_as<graph::ResizeAttrs>(n.attrs);
  const char* const modes[] = {"nearest", "linear", "cubic"};
  const char* const coords[] = {"half_pixel",         "asymmetric",           "align_corners",
                                "pytorch_half_pixel", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  const char* const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (a.mode < 0 || a.mode > 2 || a.coord < 0 || a.coord > 5 || a.nearest < 0 || a.nearest > 3)
    return false;
  auto* p = sink.emit(n, "Resize");
  const auto roi = floats_of_bits(a.roi_bits), scales = floats_of_bits(a.scale_bits);
  p->add_input(sink.initializer(sink.names[n.output] + ".roi",
                                graph::Tensor::from_floats({int64_t(roi.size())}, roi)));
  p->add_input(sink.initializer(sink.names[n.output] + ".scales",
                                graph::Tensor::from_floats({int64_t(scales.size())}, scales)));
  add_string(p, "mode", modes[a.mode]);
  add_string(p, "coordinate_transformation_mode", coords[a.coord]);
  add_string(p, "nearest_mode", nearests[a.nearest]);
  add_float(p, "cubic_coeff_a", a.cubic_coeff_a);
  add_int(p, "exclude_outside", a.exclude_outside);
  add_float(p, "extrapolation_value", a.extrapolation_value);
  return true;
}

// Pad(X, pads[, value]): the constant mode's value as a scalar of X's dtype. false for modes
// outside ONNX's.
bool export_pad(const graph::Graph& g, const Node& n, ExportSink& sink) {
  const auto a = graph::attrs_as<graph::PadAttrs>(n.attrs);
  const char* const modes[] = {"constant", "reflect", "edge"};
  if (a.mode < 0 || a.mode > 2) return false;
  auto* p = sink.emit(n, "Pad");
  add_ints_input(sink, p, n, "pads", a.pads);
  add_string(p, "mode", modes[a.mode]);
  if (a.mode == 0) {
    graph::Tensor value = graph::Tensor::zeros(g.type(n.inputs[0]).dtype, {});
    if (graph::is_float(value.dtype))
      value.f32[0] = static_cast<float>(a.value);
    else
      value.i64[0] = static_cast<int64_t>(a.value);
    p->add_input(sink.initializer(sink.names[n.output] + ".value", value));
  }
  return true;
}

void export_conv_transpose(const graph::Graph& g, const Node& n, ExportSink& sink) {
  const auto a = graph::attrs_as<graph::Conv2dTransposeAttrs>(n.attrs);
  auto* p = sink.emit(n, "ConvTranspose");
  const auto& w = g.type(n.inputs[1]).shape;
  add_ints(p, "kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
  add_ints(p, "strides", a.strides);
  add_ints(p, "pads", a.pads);
  add_ints(p, "dilations", a.dilations);
  add_ints(p, "output_padding", a.output_padding);
  add_int(p, "group", a.groups);
}

// TopK's Indices output; its Values output goes unused.
void export_top_k_indices(const Node& n, ExportSink& sink) {
  const auto a = graph::attrs_as<graph::TopKAttrs>(n.attrs);
  auto* p = sink.emit(n, "TopK");
  p->clear_output();
  p->add_output(sink.names[n.output] + ".values");
  p->add_output(sink.names[n.output]);
  add_ints_input(sink, p, n, "k", {a.k});
  add_int(p, "axis", a.axis);
  add_int(p, "largest", a.largest);
}

// The reductions: ReduceSum's axes are an input from opset 13, the others' an attribute until
// opset 18.
void export_reduction(const Node& n, const char* op_type, ExportSink& sink) {
  const auto a = graph::attrs_as<graph::ReduceAttrs>(n.attrs);
  auto* p = sink.emit(n, op_type);
  if (n.op == OpKind::kReduceSum)
    add_ints_input(sink, p, n, "axes", a.axes);
  else
    add_ints(p, "axes", a.axes);
  add_int(p, "keepdims", a.keepdims);
}

}  // namespace

// The operators of imported models beyond the zoo's, in their opset 17 forms: inputs where
// opset 17 takes lists as inputs (Slice, Squeeze, Unsqueeze, ReduceSum, Expand, Tile, Pad,
// TopK's K), attributes elsewhere (the other reductions' axes until opset 18).
Expected<bool> export_imported_op(const graph::Graph& g, const Node& n, ExportSink& sink) {
  using graph::attrs_as;
  static const std::map<OpKind, const char*> kPlain = {
      {OpKind::kExp, "Exp"},
      {OpKind::kLog, "Log"},
      {OpKind::kSqrt, "Sqrt"},
      {OpKind::kErf, "Erf"},
      {OpKind::kTanh, "Tanh"},
      {OpKind::kNeg, "Neg"},
      {OpKind::kAbs, "Abs"},
      {OpKind::kFloor, "Floor"},
      {OpKind::kCeil, "Ceil"},
      {OpKind::kRound, "Round"},
      {OpKind::kReciprocal, "Reciprocal"},
      {OpKind::kSoftplus, "Softplus"},
      {OpKind::kNot, "Not"},
      {OpKind::kPow, "Pow"},
      {OpKind::kMaximum, "Max"},
      {OpKind::kMinimum, "Min"},
      {OpKind::kPRelu, "PRelu"},
      {OpKind::kEqual, "Equal"},
      {OpKind::kLess, "Less"},
      {OpKind::kLessOrEqual, "LessOrEqual"},
      {OpKind::kGreater, "Greater"},
      {OpKind::kGreaterOrEqual, "GreaterOrEqual"},
      {OpKind::kAnd, "And"},
      {OpKind::kOr, "Or"},
      {OpKind::kXor, "Xor"},
      {OpKind::kWhere, "Where"},
  };
  static const std::map<OpKind, const char*> kReductions = {
      {OpKind::kReduceMean, "ReduceMean"},     {OpKind::kReduceSum, "ReduceSum"},
      {OpKind::kReduceMax, "ReduceMax"},       {OpKind::kReduceMin, "ReduceMin"},
      {OpKind::kReduceProd, "ReduceProd"},     {OpKind::kReduceL2, "ReduceL2"},
      {OpKind::kReduceL1, "ReduceL1"},         {OpKind::kReduceSumSquare, "ReduceSumSquare"},
      {OpKind::kReduceLogSum, "ReduceLogSum"}, {OpKind::kReduceLogSumExp, "ReduceLogSumExp"},
  };
  if (auto it = kPlain.find(n.op); it != kPlain.end()) {
    sink.emit(n, it->second);
    return true;
  }
  if (auto it = kReductions.find(n.op); it != kReductions.end()) {
    export_reduction(n, it->second, sink);
    return true;
  }
  switch (n.op) {
    case OpKind::kMod:
      add_int(sink.emit(n, "Mod"), "fmod", attrs_as<graph::ModAttrs>(n.attrs).fmod);
      return true;
    case OpKind::kLeakyRelu:
      add_float(sink.emit(n, "LeakyRelu"), "alpha", attrs_as<graph::LeakyReluAttrs>(n.attrs).alpha);
      return true;
    case OpKind::kElu:
      add_float(sink.emit(n, "Elu"), "alpha", attrs_as<graph::EluAttrs>(n.attrs).alpha);
      return true;
    case OpKind::kSelu: {
      const auto a = attrs_as<graph::SeluAttrs>(n.attrs);
      auto* p = sink.emit(n, "Selu");
      add_float(p, "alpha", a.alpha);
      add_float(p, "gamma", a.gamma);
      return true;
    }
    case OpKind::kCast:
      add_int(sink.emit(n, "Cast"), "to",
              dtype_to_onnx(static_cast<graph::DType>(attrs_as<graph::CastAttrs>(n.attrs).to)));
      return true;
    case OpKind::kGather:
      add_int(sink.emit(n, "Gather"), "axis", attrs_as<graph::GatherAttrs>(n.attrs).axis);
      return true;
    case OpKind::kGatherElements:
      add_int(sink.emit(n, "GatherElements"), "axis", attrs_as<graph::GatherAttrs>(n.attrs).axis);
      return true;
    case OpKind::kGatherND:
      add_int(sink.emit(n, "GatherND"), "batch_dims",
              attrs_as<graph::GatherNDAttrs>(n.attrs).batch_dims);
      return true;
    case OpKind::kLayerNorm: {
      const auto a = attrs_as<graph::LayerNormAttrs>(n.attrs);
      auto* p = sink.emit(n, "LayerNormalization");
      add_int(p, "axis", a.axis);
      add_float(p, "epsilon", a.epsilon);
      return true;
    }
    case OpKind::kArgMax:
    case OpKind::kArgMin: {
      const auto a = attrs_as<graph::ArgReduceAttrs>(n.attrs);
      auto* p = sink.emit(n, n.op == OpKind::kArgMax ? "ArgMax" : "ArgMin");
      add_int(p, "axis", a.axis);
      add_int(p, "keepdims", a.keepdims);
      add_int(p, "select_last_index", a.select_last_index);
      return true;
    }
    case OpKind::kSlice: {
      const auto [starts, ends, axes, steps] = attrs_as<graph::SliceAttrs>(n.attrs);
      auto* p = sink.emit(n, "Slice");
      add_ints_input(sink, p, n, "starts", starts);
      add_ints_input(sink, p, n, "ends", ends);
      add_ints_input(sink, p, n, "axes", axes);
      add_ints_input(sink, p, n, "steps", steps);
      return true;
    }
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      add_ints_input(sink, sink.emit(n, n.op == OpKind::kSqueeze ? "Squeeze" : "Unsqueeze"), n,
                     "axes", attrs_as<graph::AxesAttrs>(n.attrs).axes);
      return true;
    case OpKind::kExpand:
      add_ints_input(sink, sink.emit(n, "Expand"), n, "shape", g.type(n.output).shape);
      return true;
    case OpKind::kTile:
      add_ints_input(sink, sink.emit(n, "Tile"), n, "repeats",
                     attrs_as<graph::TileAttrs>(n.attrs).repeats);
      return true;
    case OpKind::kLogSoftmax:
      add_int(sink.emit(n, "LogSoftmax"), "axis", attrs_as<graph::SoftmaxAttrs>(n.attrs).axis);
      return true;
    case OpKind::kInstanceNorm:
      add_float(sink.emit(n, "InstanceNormalization"), "epsilon",
                attrs_as<graph::BatchNormAttrs>(n.attrs).epsilon);
      return true;
    case OpKind::kScatterND:
      export_scatter_nd(n, sink);
      return true;
    case OpKind::kResize:
      return export_resize(n, sink);
    case OpKind::kPad:
      return export_pad(g, n, sink);
    case OpKind::kConv2dTranspose:
      export_conv_transpose(g, n, sink);
      return true;
    case OpKind::kTopKIndices:
      export_top_k_indices(n, sink);
      return true;
    default:
      return false;
  }
}

}  // namespace tensortune::frontend
