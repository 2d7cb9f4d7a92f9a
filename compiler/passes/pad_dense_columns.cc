// PadDenseColumns: dense_pack's column block must divide the output columns N, so a dense whose
// N has no divisor between 16 and 64 made of whole 8-lane vectors (a language model's head over a
// vocabulary of 50257 = 29 x 1733 tokens, or 30522 = 2 x 3 x 5087) runs narrow or ragged blocks
// far from the FMA peak. With the weight
// constant, the weight gets zero rows up to the next multiple of 16 (once, here), the dense
// computes the padded columns, and a slice keeps the first N.
#include "compiler/graph/op_attrs.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::OpKind;

constexpr int64_t kColumnMultiple = 16;

/// Whether N has a divisor in [16, 64] made of whole 8-lane vectors: a block dense_pack's
/// kernels run without narrow vectors.
bool has_wide_block(int64_t n) {
  for (int64_t d = 16; d <= 64; d += 8)
    if (n % d == 0) return true;
  return false;
}

Expected<graph::Graph> run(const graph::Graph& g) {
  Rewriter rw(g);
  for (const graph::Node& n : g.nodes()) {
    const graph::Tensor* w = n.op == OpKind::kDense ? g.constant(n.inputs[1]) : nullptr;
    if (!w || w->dtype != graph::DType::kFloat32 || w->shape.size() != 2 ||
        g.type(n.inputs[0]).dtype != graph::DType::kFloat32 || w->shape[0] < 64 ||
        has_wide_block(w->shape[0])) {
      TT_RETURN_IF_ERROR(rw.copy(n));
      continue;
    }
    const int64_t N = w->shape[0], K = w->shape[1];
    const int64_t padded = (N + kColumnMultiple - 1) / kColumnMultiple * kColumnMultiple;
    graph::Tensor wide = graph::Tensor::zeros(graph::DType::kFloat32, {padded, K});
    std::copy(w->f32.begin(), w->f32.end(), wide.f32.begin());
    const graph::ValueId wv = rw.out().add_constant(n.name + ".weight_padded", std::move(wide));
    TT_ASSIGN_OR_RETURN(graph::ValueId y,
                        rw.emit(OpKind::kDense, n.name + ".padded", {rw.map(n.inputs[0]), wv}));
    graph::SliceAttrs keep;
    keep.starts = {0};
    keep.ends = {N};
    keep.axes = {1};
    keep.steps = {1};
    TT_ASSIGN_OR_RETURN(y, rw.emit(OpKind::kSlice, n.name, {y}, graph::to_attrs(keep)));
    rw.set(n.output, y);
  }
  return rw.finish();
}

}  // namespace

Pass pad_dense_columns() {
  return Pass{"PadDenseColumns",
              3,
              "a dense by a constant weight whose columns have no block of 16 to 64 computes "
              "them padded to a multiple of 16, then slices",
              {},
              run};
}

}  // namespace tensortune::passes
