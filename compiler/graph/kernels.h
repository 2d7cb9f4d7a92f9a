#pragma once
/// \file
/// Internal: the interpreter's per-operator loops, split by family.
#include <functional>

#include "compiler/graph/graph.h"
#include "compiler/graph/op_attrs.h"

namespace tensortune::graph::kernels {

// Each family's operators as an enum of their own: the interpreter names the member for every
// operator it routes (its switch over OpKind lists all of them), and each family's switches list
// every member without a `default:`, so that -Wswitch turns an operator added to a family but
// not computed into a build error, and no loop can compute one operator in place of another.

/// relu, clip, sigmoid, hard_sigmoid, hard_swish, identity (tensor_kernels.cc).
enum class ActivationOp { kRelu, kClip, kSigmoid, kHardSigmoid, kHardSwish, kIdentity };
/// add, subtract, multiply, divide with broadcasting (tensor_kernels.cc).
enum class ArithmeticOp { kAdd, kSubtract, kMultiply, kDivide };
/// The element-wise math operators of math_kernels.cc with one operand.
enum class MathOp {
  kExp,
  kLog,
  kSqrt,
  kErf,
  kTanh,
  kNeg,
  kAbs,
  kFloor,
  kCeil,
  kRound,
  kReciprocal,
  kSoftplus,
  kMish,
  kNot,
  kLeakyRelu,
  kElu,
  kSelu,
  kGelu
};
/// The element-wise operators of math_kernels.cc with two operands.
enum class MathBinaryOp {
  kPow,
  kMaximum,
  kMinimum,
  kPRelu,
  kEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor
};
enum class PoolOp { kMax, kAvg, kGlobalAvg };
enum class ReduceOp { kMean, kSum, kMax, kMin, kProd, kL2, kL1, kSumSquare, kLogSum, kLogSumExp };
enum class ArgReduceOp { kArgMax, kArgMin };

/// Aborts: a family's loop was handed a member it cannot compute for these operands (an integer
/// tensor where shape inference admits only floats). A loud bug, never another result.
[[noreturn]] void unsupported_operands(const char* family, int member, const char* why);

/// Runs fn(i) for i in [0, n) over the interpreter's threads (each i on one thread).
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

// nn_kernels.cc
Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dAttrs& a, const Shape& out_shape);
Tensor conv2d_nchwc(const Tensor& x, const Tensor& w, const Conv2dNCHWcAttrs& a,
                    const Shape& out_shape);
Tensor dense(const Tensor& x, const Tensor& w);
Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape);

// integer_kernels.cc: exact integer sums (int64), results wrapped to int32.
/// `zero_point` (nullable): subtracted from x first, so that padding reads it (ConvInteger).
Tensor conv2d_integer(const Tensor& x, const Tensor& w, const Conv2dAttrs& a,
                      const Shape& out_shape, const Tensor* zero_point = nullptr);
/// conv2d_nchwc of integer operands: NCHW[x]c data minus its zero point (nullable),
/// OIHW[x]i[y]o weights, NCHW[y]c int32 result (groups 1).
Tensor conv2d_nchwc_integer(const Tensor& x, const Tensor& w, const Tensor* zero_point,
                            const Conv2dNCHWcAttrs& a, const Shape& out_shape);
Tensor matmul_integer(const Tensor& a, const Tensor& b, const Shape& out_shape);
/// dense of integer operands: x [M, K] minus its zero point (nullable), w [N, K]; int32 [M, N].
Tensor dense_integer(const Tensor& x, const Tensor& w, const Tensor* zero_point);
/// max_pool2d's argmax: each output's flat index into x (N, C, H, W, or N, C, W, H with
/// storage_order 1; the first of equal maxima), as ONNX's MaxPool Indices.
Tensor max_pool2d_indices(const Tensor& x, const Pool2dAttrs& a, const Shape& out_shape);
/// max_pool2d, avg_pool2d, global_avg_pool2d (which reads no attributes).
Tensor pool2d(PoolOp op, const Tensor& x, const Pool2dAttrs& a, const Shape& out_shape);
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                  const Tensor& var, double epsilon);
Tensor bias_add(const Tensor& x, const Tensor& bias, int64_t axis);
Tensor softmax(const Tensor& x, int64_t axis);
/// softmax(scale * q k + mask) v (AttentionAttrs), as the unfused operators compute it.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                 double scale, const Shape& out_shape);

// tensor_kernels.cc
Tensor activation(ActivationOp op, const Tensor& x, const Attrs& attrs);
Expected<Tensor> arithmetic(ArithmeticOp op, const Tensor& a, const Tensor& b,
                            const Shape& out_shape);
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm);
Tensor concat(const std::vector<const Tensor*>& xs, int64_t axis, const Shape& out_shape);
Tensor layout_transform(const Tensor& x, int64_t from_block, int64_t to_block,
                        const Shape& out_shape);
Tensor reshape(const Tensor& x, const Shape& out_shape);
Tensor shape_of(const Tensor& x, const ShapeAttrs& a);
Tensor cast(const Tensor& x, DType to);
Tensor slice(const Tensor& x, const SliceAttrs& a, const Shape& out_shape);
Expected<Tensor> gather(const Tensor& x, const Tensor& indices, int64_t axis,
                        const Shape& out_shape);

// math_kernels.cc
/// For every element of `out_shape`, the index of the element of a tensor of shape `in` that
/// numpy broadcasting reads there.
std::vector<int64_t> broadcast_source_index(const Shape& in, const Shape& out_shape);
/// exp, log, sqrt, erf, tanh, floor, ceil, round, reciprocal, softplus, mish, leaky_relu, elu,
/// selu, gelu (float); neg, abs (any); not (bool).
Tensor unary_math(MathOp op, const Tensor& x, const Attrs& attrs);
/// pow, maximum, minimum, prelu, the comparisons and and/or/xor, with broadcasting.
Tensor binary_math(MathBinaryOp op, const Tensor& a, const Tensor& b, const TensorType& out_type);
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y, const Shape& out_shape);
/// ONNX's Mod of two tensors of one dtype, broadcast: with `fmod` the remainder takes the
/// dividend's sign (C's fmod), else the divisor's (Python's %). An integer remainder by 0 is 0
/// (ONNX leaves it undefined).
Tensor mod(const Tensor& a, const Tensor& b, bool fmod, const TensorType& out_type);
Tensor log_softmax(const Tensor& x, int64_t axis);
Tensor resize(const Tensor& x, const ResizeAttrs& a);
Tensor conv2d_transpose(const Tensor& x, const Tensor& w, const Conv2dTransposeAttrs& a,
                        const Shape& out_shape);

// index_kernels.cc. Indices out of [-dim, dim) are an error naming the index.
Expected<Tensor> gather_elements(const Tensor& x, const Tensor& indices, int64_t axis);
Expected<Tensor> gather_nd(const Tensor& x, const Tensor& indices, int64_t batch_dims,
                           const Shape& out_shape);
Expected<Tensor> scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates,
                            const ScatterNDAttrs& a);
Tensor top_k_indices(const Tensor& x, const TopKAttrs& a, const Shape& out_shape);

// reduce_kernels.cc
Tensor reduce(ReduceOp op, const Tensor& x, const ReduceAttrs& a, const Shape& out_shape);
Tensor arg_reduce(ArgReduceOp op, const Tensor& x, const ArgReduceAttrs& a, const Shape& out_shape);
Tensor pad(const Tensor& x, const PadAttrs& a, const Shape& out_shape);
Tensor expand(const Tensor& x, const Shape& out_shape);
Tensor tile(const Tensor& x, const Shape& out_shape);
Tensor layer_norm(const Tensor& x, const Tensor& scale, const Tensor* bias,
                  const LayerNormAttrs& a);
Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon);

}  // namespace tensortune::graph::kernels
