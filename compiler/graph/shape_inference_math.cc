// Output types of the element-wise math, comparison, reduction, padding, broadcasting and
// normalisation operators (the ops.def entries after `identity`).
#include <algorithm>
#include <set>

#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_inference_internal.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph::infer_detail {
namespace {

Expected<Shape> broadcast(const std::vector<TensorType>& in) {
  Shape out = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    Shape next;
    if (!broadcast_shapes(out, in[i].shape, &next))
      return invalid_argument("shapes " + shape_str(out) + " and " + shape_str(in[i].shape) +
                              " do not broadcast");
    out = std::move(next);
  }
  return out;
}

Status same_dtype(const TensorType& a, const TensorType& b) {
  if (a.dtype != b.dtype)
    return invalid_argument(std::string("operand dtypes differ: ") + dtype_name(a.dtype) + " and " +
                            dtype_name(b.dtype));
  return ok_status();
}

Status expect_bool(const TensorType& t, const char* what) {
  if (t.dtype != DType::kBool)
    return invalid_argument(std::string(what) + " must be bool, got " + dtype_name(t.dtype));
  return ok_status();
}

Expected<TensorType> infer_reduce(const TensorType& x, const ReduceAttrs& a) {
  const int64_t rank = x.shape.size();
  if (a.axes.empty()) return invalid_argument("a reduction needs at least one axis");
  std::set<int64_t> axes;
  for (int64_t axis : a.axes) {
    if (axis < 0 || axis >= rank || !axes.insert(axis).second)
      return invalid_argument("reduction axis " + std::to_string(axis) +
                              " is out of range or repeated for rank " + std::to_string(rank));
    if (x.shape[axis] == 0)
      return invalid_argument("reduction over the empty axis " + std::to_string(axis));
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!axes.count(d))
      out.push_back(x.shape[d]);
    else if (a.keepdims)
      out.push_back(1);
  }
  return TensorType{x.dtype, out};
}

Expected<TensorType> infer_pad(const TensorType& x, const PadAttrs& a) {
  const int64_t rank = x.shape.size();
  if (static_cast<int64_t>(a.pads.size()) != 2 * rank)
    return invalid_argument("pads needs " + std::to_string(2 * rank) + " values for rank " +
                            std::to_string(rank) + ", got " + std::to_string(a.pads.size()));
  if (a.mode < 0 || a.mode > 2)
    return invalid_argument("pad mode " + std::to_string(a.mode) + " is not 0, 1 or 2");
  Shape out = x.shape;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t begin = a.pads[d], end = a.pads[d + rank];
    out[d] = x.shape[d] + begin + end;
    if (out[d] < 0)
      return invalid_argument("pads " + std::to_string(begin) + ", " + std::to_string(end) +
                              " crop more than axis " + std::to_string(d) + " of " +
                              shape_str(x.shape) + " holds");
    if (a.mode != 0 && (out[d] > x.shape[d]) && x.shape[d] == 0)
      return invalid_argument("reflect and edge padding of the empty axis " + std::to_string(d));
    if (a.mode == 1 && (begin >= x.shape[d] || end >= x.shape[d]))
      return invalid_argument("reflect padding of " + std::to_string(std::max(begin, end)) +
                              " on axis " + std::to_string(d) + " of size " +
                              std::to_string(x.shape[d]) + " (must be smaller than the axis)");
  }
  return TensorType{x.dtype, out};
}

// ArgMax, ArgMin: the reduction of one axis, int64 indices.
Expected<TensorType> infer_arg_reduce(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
  const auto r = attrs_as<ArgReduceAttrs>(a);
  const int64_t axis = normalize_axis(r.axis, in[0].shape.size());
  if (axis < 0)
    return invalid_argument("axis " + std::to_string(r.axis) + " is out of range for " +
                            shape_str(in[0].shape));
  ReduceAttrs reduce;
  reduce.axes = {axis};
  reduce.keepdims = r.keepdims;
  TT_ASSIGN_OR_RETURN(TensorType t, infer_reduce(in[0], reduce));
  return TensorType{DType::kInt64, t.shape};
}

Expected<TensorType> infer_expand(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
  const Shape target = attrs_as<ReshapeAttrs>(a).shape;
  for (int64_t d : target)
    if (d < 0) return invalid_argument("expand shape " + shape_str(target) + " is negative");
  Shape out;
  if (!broadcast_shapes(in[0].shape, target, &out))
    return invalid_argument("cannot expand " + shape_str(in[0].shape) + " to " + shape_str(target));
  return TensorType{in[0].dtype, out};
}

Expected<TensorType> infer_tile(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
  const Ints repeats = attrs_as<TileAttrs>(a).repeats;
  if (repeats.size() != in[0].shape.size())
    return invalid_argument("repeats has " + std::to_string(repeats.size()) + " values for rank " +
                            std::to_string(in[0].shape.size()));
  Shape out = in[0].shape;
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0)
      return invalid_argument("repeats has " + std::to_string(repeats[d]) + " on axis " +
                              std::to_string(d));
    out[d] *= repeats[d];
  }
  if (checked_num_elements(out) < 0)
    return invalid_argument("tile output " + shape_str(out) + " is too large");
  return TensorType{in[0].dtype, out};
}

// q [..., M, K], k [..., K, N], v [..., N, Dv] with the same batch axes; a mask broadcasting to
// the scores [..., M, N].
Expected<TensorType> infer_attention(const std::vector<TensorType>& in) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 3, 4));
  for (const auto& t : in) TT_RETURN_IF_ERROR(expect_float(t, "every operand"));
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  const size_t rank = q.size();
  if (rank < 2 || k.size() != rank || v.size() != rank)
    return invalid_argument("attention q " + shape_str(q) + ", k " + shape_str(k) + " and v " +
                            shape_str(v) + " are not all of one rank >= 2");
  if (!std::equal(q.begin(), q.end() - 2, k.begin()) ||
      !std::equal(q.begin(), q.end() - 2, v.begin()) || q[rank - 1] != k[rank - 2] ||
      k[rank - 1] != v[rank - 2])
    return invalid_argument("attention q " + shape_str(q) + ", k " + shape_str(k) + " and v " +
                            shape_str(v) + " are not [..., M, K], [..., K, N], [..., N, Dv]");
  Shape scores = q;
  scores[rank - 1] = k[rank - 1];
  if (in.size() > 3) {
    Shape b;
    if (!broadcast_shapes(scores, in[3].shape, &b) || b != scores)
      return invalid_argument("attention mask " + shape_str(in[3].shape) +
                              " does not broadcast to the scores " + shape_str(scores));
  }
  Shape out = q;
  out[rank - 1] = v[rank - 1];
  return TensorType{in[0].dtype, out};
}

Expected<TensorType> infer_layer_norm(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 2, 3));
  for (const auto& t : in) TT_RETURN_IF_ERROR(expect_float(t, "every operand"));
  const int64_t rank = in[0].shape.size();
  const int64_t axis = normalize_axis(attrs_as<LayerNormAttrs>(a).axis, rank);
  if (axis < 0) return invalid_argument("layer_norm axis is out of range");
  const Shape inner(in[0].shape.begin() + axis, in[0].shape.end());
  for (size_t i = 1; i < in.size(); ++i) {
    Shape b;
    if (!broadcast_shapes(inner, in[i].shape, &b) || b != inner)
      return invalid_argument("operand " + std::to_string(i) + " " + shape_str(in[i].shape) +
                              " does not broadcast to the normalised axes " + shape_str(inner));
  }
  return in[0];
}

Expected<TensorType> infer_instance_norm(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 3, 3));
  for (const auto& t : in) TT_RETURN_IF_ERROR(expect_float(t, "every operand"));
  if (in[0].shape.size() < 3)
    return invalid_argument("instance_norm input " + shape_str(in[0].shape) +
                            " needs rank >= 3 (N, C, spatial...)");
  for (int i = 1; i < 3; ++i)
    if (in[i].shape != Shape{in[0].shape[1]})
      return invalid_argument("scale and bias must be [" + std::to_string(in[0].shape[1]) +
                              "], got " + shape_str(in[i].shape));
  return in[0];
}

// 2-D, and also 1-D and 3-D: d spatial axes, d strides, dilations and output paddings, 2d pads
// (every begin, then every end).
Expected<TensorType> infer_conv_transpose(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
  TT_RETURN_IF_ERROR(expect_float(in[0], "data"));
  TT_RETURN_IF_ERROR(expect_float(in[1], "weight"));
  const auto t = attrs_as<Conv2dTransposeAttrs>(a);
  const Shape &x = in[0].shape, &w = in[1].shape;
  const size_t d = x.size() - 2;
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size())
    return invalid_argument(
        "conv2d_transpose needs data with 1 to 3 spatial axes and a weight of its rank, got " +
        shape_str(x) + " and " + shape_str(w));
  if (t.groups < 1 || x[1] % t.groups != 0 || w[0] != x[1])
    return invalid_argument("weight " + shape_str(w) + " does not match data " + shape_str(x) +
                            " with groups=" + std::to_string(t.groups));
  if (t.strides.size() != d || t.dilations.size() != d || t.pads.size() != 2 * d ||
      t.output_padding.size() != d)
    return invalid_argument("conv2d_transpose of " + shape_str(x) + " needs " + std::to_string(d) +
                            " strides, dilations and output paddings and " + std::to_string(2 * d) +
                            " pads");
  Shape out = {x[0], w[1] * t.groups};
  for (size_t i = 0; i < d; ++i) {
    if (t.strides[i] < 1 || t.dilations[i] < 1 || t.output_padding[i] < 0)
      return invalid_argument("conv2d_transpose strides and dilations must be >= 1");
    out.push_back(t.strides[i] * (x[2 + i] - 1) + t.output_padding[i] +
                  (w[2 + i] - 1) * t.dilations[i] + 1 - t.pads[i] - t.pads[i + d]);
    if (out.back() < 1)
      return invalid_argument("conv2d_transpose output " + shape_str(out) + " is empty");
  }
  return TensorType{DType::kFloat32, out};
}

Expected<TensorType> infer_resize(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
  TT_RETURN_IF_ERROR(expect_float(in[0], "data"));
  const auto r = attrs_as<ResizeAttrs>(a);
  if (r.sizes.size() != in[0].shape.size() || r.scale_bits.size() != r.sizes.size())
    return invalid_argument("resize needs one size and one scale per axis of " +
                            shape_str(in[0].shape));
  if (r.coord == 5 && r.roi_bits.size() != 2 * r.sizes.size())
    return invalid_argument("resize tf_crop_and_resize needs a start and an end per axis");
  if (r.mode < 0 || r.mode > 2 || r.coord < 0 || r.coord > 5 || r.nearest < 0 || r.nearest > 3)
    return invalid_argument("resize mode, coordinate mode or nearest mode is out of range");
  for (size_t d = 0; d < r.sizes.size(); ++d)
    if (r.sizes[d] < 1 || (in[0].shape[d] == 0))
      return invalid_argument("resize of " + shape_str(in[0].shape) + " to " + shape_str(r.sizes) +
                              " has an empty axis");
  if (checked_num_elements(r.sizes) < 0)
    return invalid_argument("resize output " + shape_str(r.sizes) + " is too large");
  return TensorType{in[0].dtype, r.sizes};
}

}  // namespace

Expected<TensorType> infer_math_op(OpKind op, const std::vector<TensorType>& in, const Attrs& a) {
  switch (op) {
    case OpKind::kExp:
    case OpKind::kLog:
    case OpKind::kSqrt:
    case OpKind::kErf:
    case OpKind::kTanh:
    case OpKind::kFloor:
    case OpKind::kCeil:
    case OpKind::kRound:
    case OpKind::kReciprocal:
    case OpKind::kSoftplus:
    case OpKind::kMish:
    case OpKind::kLeakyRelu:
    case OpKind::kElu:
    case OpKind::kSelu:
    case OpKind::kGelu:
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      TT_RETURN_IF_ERROR(expect_float(in[0], "input"));
      return in[0];
    case OpKind::kNeg:
    case OpKind::kAbs:
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      return in[0];
    case OpKind::kNot:
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      TT_RETURN_IF_ERROR(expect_bool(in[0], "input"));
      return in[0];
    case OpKind::kMod: {
      TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
      TT_RETURN_IF_ERROR(same_dtype(in[0], in[1]));
      TT_ASSIGN_OR_RETURN(Shape out, broadcast(in));
      return TensorType{in[0].dtype, out};
    }
    case OpKind::kPow: {  // the base's dtype; the exponent may be float or integer
      TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
      TT_ASSIGN_OR_RETURN(Shape out, broadcast(in));
      return TensorType{in[0].dtype, out};
    }
    case OpKind::kMaximum:
    case OpKind::kMinimum:
    case OpKind::kPRelu: {
      TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
      TT_RETURN_IF_ERROR(same_dtype(in[0], in[1]));
      TT_ASSIGN_OR_RETURN(Shape out, broadcast(in));
      if (op == OpKind::kPRelu && out != in[0].shape)
        return invalid_argument("slope " + shape_str(in[1].shape) + " must broadcast to x " +
                                shape_str(in[0].shape));
      return TensorType{in[0].dtype, out};
    }
    case OpKind::kEqual:
    case OpKind::kLess:
    case OpKind::kLessOrEqual:
    case OpKind::kGreater:
    case OpKind::kGreaterOrEqual:
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor: {
      TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
      TT_RETURN_IF_ERROR(same_dtype(in[0], in[1]));
      if (op == OpKind::kAnd || op == OpKind::kOr || op == OpKind::kXor)
        TT_RETURN_IF_ERROR(expect_bool(in[0], "operand"));
      TT_ASSIGN_OR_RETURN(Shape out, broadcast(in));
      return TensorType{DType::kBool, out};
    }
    case OpKind::kWhere: {
      TT_RETURN_IF_ERROR(expect_inputs(in, 3, 3));
      TT_RETURN_IF_ERROR(expect_bool(in[0], "condition"));
      TT_RETURN_IF_ERROR(same_dtype(in[1], in[2]));
      TT_ASSIGN_OR_RETURN(Shape out, broadcast(in));
      return TensorType{in[1].dtype, out};
    }
    case OpKind::kReduceMean:
    case OpKind::kReduceL2:
    case OpKind::kReduceLogSum:
    case OpKind::kReduceLogSumExp:
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      TT_RETURN_IF_ERROR(expect_float(in[0], "input"));
      return infer_reduce(in[0], attrs_as<ReduceAttrs>(a));
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kReduceProd:
    case OpKind::kReduceL1:
    case OpKind::kReduceSumSquare:
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      return infer_reduce(in[0], attrs_as<ReduceAttrs>(a));
    case OpKind::kArgMax:
    case OpKind::kArgMin:
      return infer_arg_reduce(in, a);
    case OpKind::kPad:
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      return infer_pad(in[0], attrs_as<PadAttrs>(a));
    case OpKind::kExpand:
      return infer_expand(in, a);
    case OpKind::kTile:
      return infer_tile(in, a);
    case OpKind::kLayerNorm:
      return infer_layer_norm(in, a);
    case OpKind::kAttention:
      return infer_attention(in);
    case OpKind::kInstanceNorm:
      return infer_instance_norm(in, a);
    case OpKind::kConv2dTranspose:
      return infer_conv_transpose(in, a);
    case OpKind::kResize:
      return infer_resize(in, a);
    case OpKind::kLogSoftmax: {
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      TT_RETURN_IF_ERROR(expect_float(in[0], "input"));
      if (normalize_axis(attrs_as<SoftmaxAttrs>(a).axis, in[0].shape.size()) < 0)
        return invalid_argument("log_softmax axis is out of range for " + shape_str(in[0].shape));
      return in[0];
    }
    default:
      return infer_index_op(op, in, a);
  }
}

}  // namespace tensortune::graph::infer_detail
