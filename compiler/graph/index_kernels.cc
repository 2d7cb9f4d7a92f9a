// Interpreter loops for the indexing operators: gather_elements, gather_nd, scatter_nd and
// top_k_indices (ONNX's semantics: negative indices count from the end, out-of-range ones are
// an error naming the index).
#include <algorithm>
#include <numeric>

#include "compiler/graph/kernels.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph::kernels {
namespace {

// `k` within [-dim, dim), made non-negative; an error naming it otherwise.
Expected<int64_t> checked_index(int64_t k, int64_t dim, int64_t axis) {
  if (k < -dim || k >= dim)
    return invalid_argument("index " + std::to_string(k) + " is out of range for axis " +
                            std::to_string(axis) + " of size " + std::to_string(dim));
  return k < 0 ? k + dim : k;
}

// The offset into `x` of the slice an index row [first, first + m) names, starting at axis
// `from` (the batch axes before it already resolved into `base`).
Expected<int64_t> slice_offset(const Shape& x, const std::vector<int64_t>& strides,
                               const int64_t* row, int64_t m, int64_t from, int64_t base) {
  int64_t offset = base;
  for (int64_t j = 0; j < m; ++j) {
    TT_ASSIGN_OR_RETURN(int64_t k, checked_index(row[j], x[from + j], from + j));
    offset += k * strides[from + j];
  }
  return offset;
}

void copy_elements(const Tensor& from, int64_t src, Tensor& to, int64_t dst, int64_t count) {
  if (is_float(from.dtype))
    std::copy_n(from.f32.begin() + src, count, to.f32.begin() + dst);
  else
    std::copy_n(from.i64.begin() + src, count, to.i64.begin() + dst);
}

}  // namespace

Expected<Tensor> gather_elements(const Tensor& x, const Tensor& indices, int64_t axis) {
  Tensor out = Tensor::zeros(x.dtype, indices.shape);
  const auto xs = strides_of(x.shape), is = strides_of(indices.shape);
  const int64_t rank = x.shape.size(), dim = x.shape[axis];
  for (int64_t i = 0; i < indices.size(); ++i) {
    TT_ASSIGN_OR_RETURN(const int64_t k, checked_index(indices.i64[i], dim, axis));
    int64_t src = 0, rest = i;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t coord = rest / is[d];
      rest %= is[d];
      src += (d == axis ? k : coord) * xs[d];
    }
    if (is_float(x.dtype))
      out.f32[i] = x.f32[src];
    else
      out.i64[i] = x.i64[src];
  }
  return out;
}

Expected<Tensor> gather_nd(const Tensor& x, const Tensor& indices, int64_t batch_dims,
                           const Shape& out_shape) {
  Tensor out = Tensor::zeros(x.dtype, out_shape);
  const int64_t m = indices.shape.back();
  const auto xs = strides_of(x.shape);
  const int64_t b = batch_dims;
  // Elements per picked slice, index rows per batch entry, and the batch entries.
  const int64_t slice = num_elements(Shape(x.shape.begin() + b + m, x.shape.end()));
  const int64_t batches = num_elements(Shape(x.shape.begin(), x.shape.begin() + b));
  const int64_t rows = batches == 0 ? 0 : indices.size() / m / batches;
  const int64_t batch_stride = b == 0 ? 0 : xs[b - 1];
  for (int64_t n = 0; n < batches; ++n)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = n * rows + r;
      TT_ASSIGN_OR_RETURN(int64_t src,
                          slice_offset(x.shape, xs, &indices.i64[row * m], m, b, n * batch_stride));
      copy_elements(x, src, out, row * slice, slice);
    }
  return out;
}

Expected<Tensor> scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates,
                            const ScatterNDAttrs& a) {
  Tensor out = data;
  const int64_t k = indices.shape.back();
  const auto xs = strides_of(data.shape);
  const int64_t slice = num_elements(Shape(data.shape.begin() + k, data.shape.end()));
  const int64_t rows = indices.size() / k;
  for (int64_t r = 0; r < rows; ++r) {
    TT_ASSIGN_OR_RETURN(int64_t dst, slice_offset(data.shape, xs, &indices.i64[r * k], k, 0, 0));
    for (int64_t e = 0; e < slice; ++e) {
      const int64_t u = r * slice + e, o = dst + e;
      if (is_float(data.dtype)) {
        float& v = out.f32[o];
        v = a.reduction == 1   ? v + updates.f32[u]
            : a.reduction == 2 ? v * updates.f32[u]
                               : updates.f32[u];
      } else {
        int64_t& v = out.i64[o];
        const auto w = static_cast<uint64_t>(updates.i64[u]);  // wraps, never overflows
        v = wrap_integer(data.dtype, a.reduction == 1   ? static_cast<int64_t>(v + w)
                                     : a.reduction == 2 ? static_cast<int64_t>(v * w)
                                                        : updates.i64[u]);
      }
    }
  }
  return out;
}

Tensor top_k_indices(const Tensor& x, const TopKAttrs& a, const Shape& out_shape) {
  Tensor out = Tensor::zeros(DType::kInt64, out_shape);
  const int64_t axis = normalize_axis(a.axis, x.shape.size());
  const int64_t n = x.shape[axis], k = out_shape[axis];
  const int64_t inner = num_elements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  const int64_t outer = num_elements(Shape(x.shape.begin(), x.shape.begin() + axis));
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      auto value = [&](int64_t j) { return x.at(base + j * inner); };
      std::iota(order.begin(), order.end(), 0);
      // Ties keep the lower index first: a stable sort by value alone.
      std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
        return a.largest ? value(p) > value(q) : value(p) < value(q);
      });
      for (int64_t j = 0; j < k; ++j) out.i64[(o * k + j) * inner + i] = order[j];
    }
  return out;
}

}  // namespace tensortune::graph::kernels
