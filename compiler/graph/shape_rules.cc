#include "compiler/graph/shape_rules.h"

#include <algorithm>

namespace tensortune::graph {

int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                           int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t span = in + pad_begin + pad_end - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  const int64_t steps = ceil_mode ? (span + stride - 1) / stride : span / stride;
  return steps + 1;
}

SliceRange normalize_slice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  SliceRange r;
  r.step = step;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    r.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    r.count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  r.start = start;
  return r;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return -1;
  return axis < 0 ? axis + rank : axis;
}

int64_t matmul_batch_offset(const Shape& out_shape, const Shape& op, int64_t bi) {
  const int64_t rank = out_shape.size();
  const int64_t op_batch_rank = op.size() - 2;
  int64_t offset = 0, stride = op[op.size() - 2] * op.back();
  for (int64_t dim = rank - 3; dim >= 0; --dim) {
    const int64_t idx = bi % out_shape[dim];
    bi /= out_shape[dim];
    const int64_t od = dim - (rank - 2 - op_batch_rank);
    if (od < 0) continue;
    if (op[od] != 1) offset += idx * stride;
    stride *= op[od];
  }
  return offset;
}

StridedView transpose_view(const Shape& in_shape, const std::vector<int64_t>& perm) {
  const auto in_strides = strides_of(in_shape);
  StridedView v;
  for (int64_t axis : perm) v.strides.push_back(in_strides[static_cast<size_t>(axis)]);
  return v;
}

StridedView slice_view(const Shape& in_shape, const std::vector<int64_t>& axes,
                       const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                       const std::vector<int64_t>& steps) {
  StridedView v;
  v.strides = strides_of(in_shape);
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto axis = static_cast<size_t>(axes[i]);
    const SliceRange r = normalize_slice(in_shape[axis], starts[i], ends[i], steps[i]);
    v.base += r.start * v.strides[axis];
    v.strides[axis] *= r.step;
  }
  return v;
}

}  // namespace tensortune::graph
