// Output types of every operator: the single place where an operator's shape contract lives.
#include <algorithm>
#include <numeric>
#include <set>

#include "compiler/graph/graph.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_inference_internal.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph {
namespace infer_detail {

std::string shape_str(const Shape& s) {
  std::string r(1, '[');
  r.append(shape_to_string(s));
  r.push_back(']');
  return r;
}

Status expect_inputs(const std::vector<TensorType>& in, size_t lo, size_t hi) {
  if (in.size() < lo || in.size() > hi)
    return invalid_argument("expects " + std::to_string(lo) +
                            (hi != lo ? ".." + std::to_string(hi) : "") + " inputs, got " +
                            std::to_string(in.size()));
  return ok_status();
}

Status expect_float(const TensorType& t, const char* what) {
  if (t.dtype != DType::kFloat32)
    return invalid_argument(std::string(what) + " must be float32, got " + dtype_name(t.dtype));
  return ok_status();
}

}  // namespace infer_detail

namespace {

using namespace infer_detail;

Status expect_ints(const Ints& v, const char* name, size_t count, int64_t min_value) {
  if (v.size() != count)
    return invalid_argument(std::string("attribute ") + name + " needs " + std::to_string(count) +
                            " values, got " + std::to_string(v.size()));
  for (int64_t x : v)
    if (x < min_value)
      return invalid_argument(std::string("attribute ") + name + " has value " + std::to_string(x) +
                              " (must be >= " + std::to_string(min_value) + ")");
  return ok_status();
}

// Spatial output sizes of a windowed operator (conv or pool) over H, W.
Expected<std::pair<int64_t, int64_t>> window_hw(int64_t h, int64_t w, int64_t kh, int64_t kw,
                                                const Ints& s, const Ints& p, const Ints& d,
                                                bool ceil_mode) {
  TT_RETURN_IF_ERROR(expect_ints(s, "strides", 2, 1));
  TT_RETURN_IF_ERROR(expect_ints(p, "pads", 4, 0));
  TT_RETURN_IF_ERROR(expect_ints(d, "dilations", 2, 1));
  const int64_t oh = window_output_size(h, kh, s[0], d[0], p[0], p[2], ceil_mode);
  const int64_t ow = window_output_size(w, kw, s[1], d[1], p[1], p[3], ceil_mode);
  if (oh < 1 || ow < 1)
    return invalid_argument("window " + std::to_string(kh) + "x" + std::to_string(kw) +
                            " does not fit input " + std::to_string(h) + "x" + std::to_string(w) +
                            " with these pads (output " + std::to_string(oh) + "x" +
                            std::to_string(ow) + ")");
  return std::make_pair(oh, ow);
}

Expected<TensorType> infer_conv2d(const std::vector<TensorType>& in, const Conv2dAttrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
  const Shape &x = in[0].shape, &wt = in[1].shape;
  TT_RETURN_IF_ERROR(expect_float(in[0], "data"));
  TT_RETURN_IF_ERROR(expect_float(in[1], "weight"));
  if (x.size() != 4) return invalid_argument("data must be NCHW (rank 4), got " + shape_str(x));
  if (wt.size() != 4) return invalid_argument("weight must be OIHW (rank 4), got " + shape_str(wt));
  const int64_t groups = a.groups;
  if (groups < 1 || x[1] % groups != 0 || wt[0] % groups != 0)
    return invalid_argument("groups=" + std::to_string(groups) + " does not divide channels " +
                            std::to_string(x[1]) + " -> " + std::to_string(wt[0]));
  if (wt[1] * groups != x[1])
    return invalid_argument("weight input channels " + std::to_string(wt[1]) + " x groups " +
                            std::to_string(groups) + " != data channels " + std::to_string(x[1]));
  TT_ASSIGN_OR_RETURN(auto hw,
                      window_hw(x[2], x[3], wt[2], wt[3], a.strides, a.pads, a.dilations, false));
  return TensorType{DType::kFloat32, {x[0], wt[0], hw.first, hw.second}};
}

/// A zero point: one element of the data's integer dtype.
Status expect_zero_point(const TensorType& zp, const TensorType& data) {
  if (num_elements(zp.shape) != 1 || zp.dtype != data.dtype || is_float(data.dtype))
    return invalid_argument("the zero point must be one element of the data's integer dtype " +
                            type_string(data) + ", got " + type_string(zp));
  return Status{};
}

/// float32 data and weight give float32; integer ones (uint8 data, int8 weight, and the data's
/// optional zero point as a third input) an int32 result.
Expected<TensorType> infer_conv2d_nchwc(const std::vector<TensorType>& in,
                                        const Conv2dNCHWcAttrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 2, 3));
  const bool integer = !is_float(in[0].dtype);
  if (integer != !is_float(in[1].dtype))
    return invalid_argument("data " + type_string(in[0]) + " and weight " + type_string(in[1]) +
                            " must be both float or both integer");
  if (in.size() == 3 && !integer)
    return invalid_argument("only an integer conv2d_nchwc takes a zero point");
  if (in.size() == 3) TT_RETURN_IF_ERROR(expect_zero_point(in[2], in[0]));
  const Shape &x = in[0].shape, &wt = in[1].shape;
  const int64_t ic_bn = a.ic_bn, oc_bn = a.oc_bn, groups = a.groups;
  if (x.size() != 5 || x[4] != ic_bn)
    return invalid_argument("data must be NCHW" + std::to_string(ic_bn) + "c, got " + shape_str(x));
  if (wt.size() != 6 || wt[5] != oc_bn)
    return invalid_argument("weight must be OIHW[i]i" + std::to_string(oc_bn) + "o, got " +
                            shape_str(wt));
  const int64_t channels = x[1] * ic_bn;
  if (groups == 1) {
    if (wt[1] != x[1] || wt[4] != ic_bn)
      return invalid_argument("weight " + shape_str(wt) + " does not match data " + shape_str(x));
  } else if (groups == channels) {
    // Depthwise: output channel c reads input channel c, whatever the two blocks.
    if (wt[0] * oc_bn != channels || wt[1] != 1 || wt[4] != 1)
      return invalid_argument("depthwise weight " + shape_str(wt) + " does not match data " +
                              shape_str(x));
  } else {
    return invalid_argument("conv2d_nchwc supports groups 1 or depthwise, got groups=" +
                            std::to_string(groups));
  }
  TT_ASSIGN_OR_RETURN(auto hw,
                      window_hw(x[2], x[3], wt[2], wt[3], a.strides, a.pads, a.dilations, false));
  return TensorType{integer ? DType::kInt32 : DType::kFloat32,
                    {x[0], wt[0], hw.first, hw.second, oc_bn}};
}

Expected<TensorType> infer_pool(OpKind op, const std::vector<TensorType>& in, const Attrs& attrs) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
  TT_RETURN_IF_ERROR(expect_float(in[0], "data"));
  const Shape& x = in[0].shape;
  const auto a = attrs_as<Pool2dAttrs>(attrs);
  const int64_t block =
      op == OpKind::kGlobalAvgPool2d ? attrs_as<GlobalPool2dAttrs>(attrs).block : a.block;
  const size_t rank = block ? 5 : 4;
  if (x.size() != rank || (block && x[4] != block))
    return invalid_argument(std::string("data must be ") +
                            (block ? "NCHW" + std::to_string(block) + "c" : "NCHW") + ", got " +
                            shape_str(x));
  Shape out = x;
  if (op == OpKind::kGlobalAvgPool2d) {
    out[2] = out[3] = 1;
    return TensorType{DType::kFloat32, out};
  }
  TT_RETURN_IF_ERROR(expect_ints(a.kernel, "kernel", 2, 1));
  TT_ASSIGN_OR_RETURN(auto hw, window_hw(x[2], x[3], a.kernel[0], a.kernel[1], a.strides, a.pads,
                                         a.dilations, a.ceil_mode != 0));
  out[2] = hw.first;
  out[3] = hw.second;
  return TensorType{DType::kFloat32, out};
}

Expected<TensorType> infer_layout_transform(const TensorType& t, const LayoutTransformAttrs& a) {
  const int64_t from = a.from_block, to = a.to_block;
  const Shape& x = t.shape;
  if (from < 0 || to < 0) return invalid_argument("block sizes must be >= 0");
  if (x.size() != (from ? 5u : 4u) || (from && x[4] != from))
    return invalid_argument("input " + shape_str(x) + " is not in layout " +
                            (from ? "NCHW" + std::to_string(from) + "c" : std::string("NCHW")));
  const int64_t channels = from ? x[1] * from : x[1];
  if (to == 0) return TensorType{t.dtype, {x[0], channels, x[2], x[3]}};
  if (channels % to != 0)
    return invalid_argument("block " + std::to_string(to) + " does not divide channels " +
                            std::to_string(channels));
  return TensorType{t.dtype, {x[0], channels / to, x[2], x[3], to}};
}

Expected<TensorType> infer_matmul(const std::vector<TensorType>& in) {
  const Shape &a = in[0].shape, &b = in[1].shape;
  if (a.size() < 2 || b.size() < 2)
    return invalid_argument("matmul needs rank >= 2, got " + shape_str(a) + " and " + shape_str(b));
  if (a.back() != b[b.size() - 2])
    return invalid_argument("inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
  Shape batch;
  if (!broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), &batch))
    return invalid_argument("batch dimensions do not broadcast");
  batch.push_back(a[a.size() - 2]);
  batch.push_back(b.back());
  return TensorType{DType::kFloat32, batch};
}

Expected<TensorType> infer_shape_op(OpKind op, const std::vector<TensorType>& in, const Attrs& a) {
  const TensorType& t = in[0];
  const int64_t rank = static_cast<int64_t>(t.shape.size());
  switch (op) {
    case OpKind::kShape: {
      const auto sa = attrs_as<ShapeAttrs>(a);
      int64_t start = sa.start, end = sa.end.value_or(rank);
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, 0, rank);
      return TensorType{DType::kInt64, {std::max<int64_t>(end - start, 0)}};
    }
    case OpKind::kCast: {
      const int64_t to = attrs_as<CastAttrs>(a).to;
      if (to < 0 || to > static_cast<int64_t>(DType::kUInt64))
        return invalid_argument("cast to dtype " + std::to_string(to) + " is unknown");
      return TensorType{static_cast<DType>(to), t.shape};
    }
    case OpKind::kSlice: {
      const auto [starts, ends, axes, steps] = attrs_as<SliceAttrs>(a);
      if (starts.size() != ends.size() || axes.size() != starts.size() ||
          steps.size() != starts.size())
        return invalid_argument("starts, ends, axes and steps must have the same length");
      Shape out = t.shape;
      std::set<int64_t> seen;
      for (size_t i = 0; i < axes.size(); ++i) {
        if (axes[i] < 0 || axes[i] >= rank || !seen.insert(axes[i]).second)
          return invalid_argument("slice axis " + std::to_string(axes[i]) +
                                  " is out of range or repeated for rank " + std::to_string(rank));
        if (steps[i] == 0)
          return invalid_argument("slice step 0 on axis " + std::to_string(axes[i]));
        out[axes[i]] = normalize_slice(t.shape[axes[i]], starts[i], ends[i], steps[i]).count;
      }
      return TensorType{t.dtype, out};
    }
    case OpKind::kGather: {
      const int64_t axis = normalize_axis(attrs_as<GatherAttrs>(a).axis, rank);
      if (axis < 0)
        return invalid_argument("gather axis out of range for rank " + std::to_string(rank));
      if (is_float(in[1].dtype)) return invalid_argument("gather indices must be integers");
      Shape out(t.shape.begin(), t.shape.begin() + axis);
      out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
      out.insert(out.end(), t.shape.begin() + axis + 1, t.shape.end());
      return TensorType{t.dtype, out};
    }
    case OpKind::kUnsqueeze: {
      const auto axes = attrs_as<AxesAttrs>(a).axes;
      const int64_t out_rank = rank + static_cast<int64_t>(axes.size());
      std::vector<bool> inserted(out_rank, false);
      for (int64_t ax : axes) {
        const int64_t n = normalize_axis(ax, out_rank);
        if (n < 0 || inserted[n])
          return invalid_argument("unsqueeze axis " + std::to_string(ax) +
                                  " out of range or repeated");
        inserted[n] = true;
      }
      Shape out;
      size_t next = 0;
      for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? 1 : t.shape[next++]);
      return TensorType{t.dtype, out};
    }
    case OpKind::kSqueeze: {
      const auto axes = attrs_as<AxesAttrs>(a).axes;
      std::vector<bool> drop(rank, false);
      if (axes.empty()) {
        for (int64_t i = 0; i < rank; ++i) drop[i] = t.shape[i] == 1;
      }
      for (int64_t ax : axes) {
        const int64_t n = normalize_axis(ax, rank);
        if (n < 0 || t.shape[n] != 1)
          return invalid_argument("squeeze axis " + std::to_string(ax) +
                                  " is out of range or not of size 1");
        drop[n] = true;
      }
      Shape out;
      for (int64_t i = 0; i < rank; ++i)
        if (!drop[i]) out.push_back(t.shape[i]);
      return TensorType{t.dtype, out};
    }
    default:
      break;
  }
  return internal_error("not a shape operator");
}

// ConvInteger and MatMulInteger: the float rules on the shapes; integer operands, an int32 result.
// A convolution's optional third input is the data's zero point (ONNX ConvInteger's x_zero_point).
Expected<TensorType> infer_integer_product(OpKind op, const std::vector<TensorType>& in,
                                           const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 2, op == OpKind::kConv2dInteger ? 3 : 2));
  if (in.size() == 3) TT_RETURN_IF_ERROR(expect_zero_point(in[2], in[0]));
  std::vector<TensorType> as_float(in.begin(), in.begin() + 2);
  for (auto& t : as_float) {
    if (is_float(t.dtype))
      return invalid_argument(std::string(op_name(op)) + " needs integer operands, got " +
                              type_string(t));
    t.dtype = DType::kFloat32;
  }
  TT_ASSIGN_OR_RETURN(TensorType t, op == OpKind::kMatMulInteger
                                        ? infer_matmul(as_float)
                                        : infer_conv2d(as_float, attrs_as<Conv2dAttrs>(a)));
  t.dtype = DType::kInt32;
  return t;
}

// float32, or integer operands (and the data's zero point as a third input): int32.
Expected<TensorType> infer_dense(const std::vector<TensorType>& in, const Attrs&) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 2, 3));
  const Shape &x = in[0].shape, &w = in[1].shape;
  if (x.size() != 2 || w.size() != 2 || x[1] != w[1])
    return invalid_argument("dense needs x [M, K] and weight [N, K], got " + shape_str(x) +
                            " and " + shape_str(w));
  const bool integer = !is_float(in[0].dtype);
  if (integer != !is_float(in[1].dtype))
    return invalid_argument("dense data " + type_string(in[0]) + " and weight " +
                            type_string(in[1]) + " must be both float or both integer");
  if (in.size() == 3 && !integer)
    return invalid_argument("only an integer dense takes a zero point");
  if (in.size() == 3) TT_RETURN_IF_ERROR(expect_zero_point(in[2], in[0]));
  return TensorType{integer ? DType::kInt32 : DType::kFloat32, {x[0], w[0]}};
}

Expected<TensorType> infer_bias_add(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
  const int64_t given = attrs_as<BiasAddAttrs>(a).axis;
  const int64_t axis = normalize_axis(given, in[0].shape.size());
  if (axis < 0 || in[1].shape.size() != 1 || in[1].shape[0] != in[0].shape[axis])
    return invalid_argument("bias " + shape_str(in[1].shape) + " does not match axis " +
                            std::to_string(given) + " of " + shape_str(in[0].shape));
  return in[0];
}

Expected<TensorType> infer_batch_norm(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 5, 5));
  if (in[0].shape.size() < 2) return invalid_argument("batch_norm needs rank >= 2");
  for (size_t i = 1; i < 5; ++i)
    if (in[i].shape != Shape{in[0].shape[1]})
      return invalid_argument("parameter " + std::to_string(i) + " has shape " +
                              shape_str(in[i].shape) + ", expected [" +
                              std::to_string(in[0].shape[1]) + "]");
  return in[0];
}

// Add, subtract, multiply, divide: one dtype, numpy broadcasting.
Expected<TensorType> infer_arithmetic(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
  if (in[0].dtype != in[1].dtype)
    return invalid_argument(std::string("operand dtypes differ: ") + dtype_name(in[0].dtype) +
                            " and " + dtype_name(in[1].dtype));
  Shape out;
  if (!broadcast_shapes(in[0].shape, in[1].shape, &out))
    return invalid_argument("shapes " + shape_str(in[0].shape) + " and " + shape_str(in[1].shape) +
                            " do not broadcast");
  return TensorType{in[0].dtype, out};
}

Expected<TensorType> infer_flatten(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
  const int64_t rank = in[0].shape.size();
  const int64_t given = attrs_as<FlattenAttrs>(a).axis;
  const int64_t axis = given < 0 ? given + rank : given;
  if (axis < 0 || axis > rank)
    return invalid_argument("flatten axis " + std::to_string(given) + " out of range for rank " +
                            std::to_string(rank));
  const Shape& s = in[0].shape;
  return TensorType{in[0].dtype,
                    {num_elements(Shape(s.begin(), s.begin() + axis)),
                     num_elements(Shape(s.begin() + axis, s.end()))}};
}

Expected<TensorType> infer_reshape(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
  const Shape target = attrs_as<ReshapeAttrs>(a).shape;
  for (int64_t d : target)
    if (d < 0) return invalid_argument("reshape target " + shape_str(target) + " is not resolved");
  if (num_elements(target) != num_elements(in[0].shape))
    return invalid_argument("cannot reshape " + shape_str(in[0].shape) + " to " +
                            shape_str(target));
  return TensorType{in[0].dtype, target};
}

Expected<TensorType> infer_transpose(const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
  const auto perm = attrs_as<TransposeAttrs>(a).perm;
  const size_t rank = in[0].shape.size();
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(rank);
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota)
    return invalid_argument("perm is not a permutation of " + std::to_string(rank) + " axes");
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) out[i] = in[0].shape[perm[i]];
  return TensorType{in[0].dtype, out};
}

Expected<TensorType> infer_concat(const std::vector<TensorType>& in, const Attrs& a) {
  if (in.empty()) return invalid_argument("concat needs at least one input");
  const int64_t rank = in[0].shape.size();
  const int64_t axis = normalize_axis(attrs_as<ConcatAttrs>(a).axis, rank);
  if (axis < 0)
    return invalid_argument("concat axis out of range for rank " + std::to_string(rank));
  Shape out = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].dtype != in[0].dtype || in[i].shape.size() != out.size())
      return invalid_argument("input " + std::to_string(i) + " has type " + type_string(in[i]) +
                              ", unlike input 0");
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) continue;
      if (in[i].shape[d] != out[d])
        return invalid_argument("input " + std::to_string(i) + " " + shape_str(in[i].shape) +
                                " differs off the concat axis");
    }
    out[axis] += in[i].shape[axis];
  }
  return TensorType{in[0].dtype, out};
}

Expected<TensorType> infer(OpKind op, const std::vector<TensorType>& in, const Attrs& a) {
  switch (op) {
    case OpKind::kConv2d:
      return infer_conv2d(in, attrs_as<Conv2dAttrs>(a));
    case OpKind::kConv2dInteger:
    case OpKind::kMatMulInteger:
      return infer_integer_product(op, in, a);
    case OpKind::kConv2dNCHWc:
      return infer_conv2d_nchwc(in, attrs_as<Conv2dNCHWcAttrs>(a));
    case OpKind::kDense:
      return infer_dense(in, a);
    case OpKind::kMatMul:
      TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
      return infer_matmul(in);
    case OpKind::kBiasAdd:
      return infer_bias_add(in, a);
    case OpKind::kBatchNorm:
      return infer_batch_norm(in, a);
    case OpKind::kRelu:
    case OpKind::kClip:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kIdentity:
    case OpKind::kSoftmax:
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      // relu and clip also take integers (ONNX's Clip on int8, ...); they run interpreted.
      if (op != OpKind::kIdentity && op != OpKind::kRelu && op != OpKind::kClip)
        TT_RETURN_IF_ERROR(expect_float(in[0], "input"));
      if (op == OpKind::kSoftmax &&
          normalize_axis(attrs_as<SoftmaxAttrs>(a).axis, in[0].shape.size()) < 0)
        return invalid_argument("softmax axis " + std::to_string(attrs_as<SoftmaxAttrs>(a).axis) +
                                " out of range for " + shape_str(in[0].shape));
      return in[0];
    case OpKind::kAdd:
    case OpKind::kSubtract:
    case OpKind::kMultiply:
    case OpKind::kDivide:
      return infer_arithmetic(in, a);
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
    case OpKind::kGlobalAvgPool2d:
      return infer_pool(op, in, a);
    case OpKind::kMaxPool2dIndices: {  // max_pool2d's argmax: int64, of its output's shape
      TT_ASSIGN_OR_RETURN(TensorType t, infer_pool(OpKind::kMaxPool2d, in, a));
      t.dtype = DType::kInt64;
      return t;
    }
    case OpKind::kFlatten:
      return infer_flatten(in, a);
    case OpKind::kReshape:
      return infer_reshape(in, a);
    case OpKind::kTranspose:
      return infer_transpose(in, a);
    case OpKind::kConcat:
      return infer_concat(in, a);
    case OpKind::kLayoutTransform:
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      return infer_layout_transform(in[0], attrs_as<LayoutTransformAttrs>(a));
    case OpKind::kShape:
    case OpKind::kCast:
    case OpKind::kSlice:
    case OpKind::kUnsqueeze:
    case OpKind::kSqueeze:
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      return infer_shape_op(op, in, a);
    case OpKind::kGather:
      TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
      return infer_shape_op(op, in, a);
    default:
      return infer_detail::infer_math_op(op, in, a);
  }
}

}  // namespace

Expected<TensorType> infer_type(OpKind op, const std::vector<TensorType>& in, const Attrs& a) {
  TT_RETURN_IF_ERROR(validate_attrs(op, a));
  return infer(op, in, a);
}

}  // namespace tensortune::graph
