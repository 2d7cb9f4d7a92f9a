#pragma once
/// \file
/// Internal: the interpreter's per-operator loops, split by family.
#include <functional>

#include "compiler/graph/graph.h"
#include "compiler/graph/op_attrs.h"

namespace tensortune::graph::kernels {

/// Runs fn(i) for i in [0, n) over the interpreter's threads (each i on one thread).
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

// nn_kernels.cc
Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dAttrs& a, const Shape& out_shape);
Tensor conv2d_nchwc(const Tensor& x, const Tensor& w, const Conv2dNCHWcAttrs& a,
                    const Shape& out_shape);
Tensor dense(const Tensor& x, const Tensor& w);
Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape);
/// max_pool2d, avg_pool2d, global_avg_pool2d (which reads no attributes).
Tensor pool2d(OpKind op, const Tensor& x, const Pool2dAttrs& a, const Shape& out_shape);
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                  const Tensor& var, double epsilon);
Tensor bias_add(const Tensor& x, const Tensor& bias, int64_t axis);
Tensor softmax(const Tensor& x, int64_t axis);

// tensor_kernels.cc
Tensor unary(OpKind op, const Tensor& x, const Attrs& attrs);
Expected<Tensor> binary(OpKind op, const Tensor& a, const Tensor& b, const Shape& out_shape);
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

}  // namespace tensortune::graph::kernels
