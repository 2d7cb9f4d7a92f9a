#pragma once
/// \file
/// Index arithmetic shared by shape inference and the interpreter, so that the shape a node
/// promises and the data it produces cannot disagree.
#include <cstdint>
#include <vector>

#include "compiler/graph/tensor.h"

namespace tensortune::graph {

/// `floor((in + pad_begin + pad_end - dilation*(kernel-1) - 1) / stride) + 1`, or the ceiling
/// with `ceil_mode` (pooling). May be <= 0 for shapes that do not fit.
int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                           int64_t pad_begin, int64_t pad_end, bool ceil_mode = false);

/// A slice of one axis after ONNX's clamping rules: elements start, start+step, ... (count).
struct SliceRange {
  int64_t start = 0, step = 1, count = 0;
};
SliceRange normalize_slice(int64_t dim, int64_t start, int64_t end, int64_t step);

/// Normalises a possibly negative axis against `rank`; -1 when out of [-rank, rank).
int64_t normalize_axis(int64_t axis, int64_t rank);

/// What a transpose or a slice reads, as a view of its input: the output element at coordinates
/// c is input[base + sum over d of c[d] * strides[d]] (C-contiguous input).
struct StridedView {
  int64_t base = 0;
  std::vector<int64_t> strides;  ///< one per output axis
};
StridedView transpose_view(const Shape& in_shape, const std::vector<int64_t>& perm);
StridedView slice_view(const Shape& in_shape, const std::vector<int64_t>& axes,
                       const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                       const std::vector<int64_t>& steps);

/// Where batch `bi` of a matmul's output (of `out_shape`) starts inside an operand of shape
/// `op`, whose batch axes broadcast against the output's (numpy's rule).
int64_t matmul_batch_offset(const Shape& out_shape, const Shape& op, int64_t bi);

}  // namespace tensortune::graph
