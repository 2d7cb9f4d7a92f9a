// Output types of the indexing operators: gather_elements, gather_nd, scatter_nd and
// top_k_indices.
#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_inference_internal.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph::infer_detail {
namespace {

Status expect_integer(const TensorType& t, const char* what) {
  if (is_float(t.dtype))
    return invalid_argument(std::string(what) + " must be integers, got " + type_string(t));
  return ok_status();
}

}  // namespace

Expected<TensorType> infer_index_op(OpKind op, const std::vector<TensorType>& in, const Attrs& a) {
  switch (op) {
    case OpKind::kGatherElements: {
      TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
      const int64_t rank = in[0].shape.size();
      if (normalize_axis(attrs_as<GatherAttrs>(a).axis, rank) < 0)
        return invalid_argument("gather_elements axis is out of range for " +
                                shape_str(in[0].shape));
      if (is_float(in[1].dtype) || static_cast<int64_t>(in[1].shape.size()) != rank)
        return invalid_argument(
            "gather_elements indices must be integers of the data's rank, got " +
            type_string(in[1]));
      for (int64_t d = 0; d < rank; ++d)
        if (d != normalize_axis(attrs_as<GatherAttrs>(a).axis, rank) &&
            in[1].shape[d] > in[0].shape[d])
          return invalid_argument("indices " + shape_str(in[1].shape) + " exceed data " +
                                  shape_str(in[0].shape) + " off the axis");
      return TensorType{in[0].dtype, in[1].shape};
    }
    case OpKind::kGatherND: {
      // data [d0..d(r-1)], indices [i0..i(q-2), m]: each index row picks the slice
      // data[b..., row] of shape [d(b+m)..]; the first b axes of both are the batch.
      TT_RETURN_IF_ERROR(expect_inputs(in, 2, 2));
      TT_RETURN_IF_ERROR(expect_integer(in[1], "gather_nd indices"));
      const Shape &x = in[0].shape, &ix = in[1].shape;
      const int64_t b = attrs_as<GatherNDAttrs>(a).batch_dims;
      const int64_t r = x.size(), q = ix.size();
      if (q < 1 || b < 0 || b >= std::min(r, q))
        return invalid_argument("gather_nd batch_dims " + std::to_string(b) +
                                " does not fit data " + shape_str(x) + " and indices " +
                                shape_str(ix));
      const int64_t m = ix.back();
      if (m < 1 || m > r - b)
        return invalid_argument("gather_nd indices' last axis is " + std::to_string(m) +
                                ", must be 1.." + std::to_string(r - b) + " for data " +
                                shape_str(x));
      for (int64_t d = 0; d < b; ++d)
        if (x[d] != ix[d])
          return invalid_argument("gather_nd batch axes of data " + shape_str(x) + " and indices " +
                                  shape_str(ix) + " differ");
      Shape out(ix.begin(), ix.end() - 1);
      out.insert(out.end(), x.begin() + b + m, x.end());
      return TensorType{in[0].dtype, out};
    }
    case OpKind::kScatterND: {
      // data, indices [i0..i(q-2), k], updates [i0..i(q-2), d(k)..]: output is data's type.
      TT_RETURN_IF_ERROR(expect_inputs(in, 3, 3));
      TT_RETURN_IF_ERROR(expect_integer(in[1], "scatter_nd indices"));
      const Shape &x = in[0].shape, &ix = in[1].shape, &u = in[2].shape;
      if (in[2].dtype != in[0].dtype)
        return invalid_argument("scatter_nd updates " + type_string(in[2]) +
                                " differ in dtype from data " + type_string(in[0]));
      const auto reduction = attrs_as<ScatterNDAttrs>(a).reduction;
      if (reduction < 0 || reduction > 2)
        return invalid_argument("scatter_nd reduction " + std::to_string(reduction) +
                                " is not 0 (none), 1 (add) or 2 (mul)");
      if (ix.empty() || ix.back() < 1 || ix.back() > static_cast<int64_t>(x.size()))
        return invalid_argument("scatter_nd indices " + shape_str(ix) + " need a last axis of 1.." +
                                std::to_string(x.size()));
      Shape want(ix.begin(), ix.end() - 1);
      want.insert(want.end(), x.begin() + ix.back(), x.end());
      if (u != want)
        return invalid_argument("scatter_nd updates " + shape_str(u) + " must have shape " +
                                shape_str(want));
      return in[0];
    }
    case OpKind::kTopKIndices: {
      TT_RETURN_IF_ERROR(expect_inputs(in, 1, 1));
      const auto t = attrs_as<TopKAttrs>(a);
      const int64_t axis = normalize_axis(t.axis, in[0].shape.size());
      if (axis < 0)
        return invalid_argument("top_k axis " + std::to_string(t.axis) + " is out of range for " +
                                shape_str(in[0].shape));
      if (t.k < 0 || t.k > in[0].shape[axis])
        return invalid_argument("top_k k = " + std::to_string(t.k) + " exceeds axis " +
                                std::to_string(axis) + " of " + shape_str(in[0].shape));
      Shape out = in[0].shape;
      out[axis] = t.k;
      return TensorType{DType::kInt64, out};
    }
    default:
      return internal_error(std::string("no shape rule for operator ") + op_name(op));
  }
}

}  // namespace tensortune::graph::infer_detail
