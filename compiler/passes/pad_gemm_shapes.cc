// PadGemmShapes: the GEMM templates' register tiles must divide their axes (AutoTVM's factor
// splits), so a dense or batch matmul whose rows or columns are awkward numbers runs narrow tiles
// far from the FMA peak: a ViT's 197 tokens (prime: one row per tile), a language model's
// vocabulary of 50257 = 29 x 1733 columns, or 30522 = 2 x 3 x 5087. Such a GEMM computes a padded
// one instead and slices its result:
// - rows M > 16 that 4 does not divide: the activation gets zero rows up to a multiple of 8 (a
//   pad that appends, and the slice of the result's first rows a prefix: the CPU executor makes
//   both views that copy nothing, graph/memory_plan.h);
// - columns N >= 32 with no divisor in [16, 64] made of whole 8-lane vectors: a constant dense
//   weight gets zero rows up to a multiple of 16 (once, here); a batch matmul's second operand
//   zero columns (a copy at run time).
// The padded rows and columns compute values the slice drops. A bias added right after a padded
// dense is added before the slice, so that the dense kernel's epilogue still takes it.
#include <optional>

#include "compiler/graph/op_attrs.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::OpKind;
using graph::Shape;
using graph::ValueId;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/// Rows worth padding: more than 16, and no tile of 4 divides them (the templates' fallbacks tile
/// rows by the largest power of two dividing them: a Swin window's 49 tokens would run one row
/// at a time).
int64_t padded_rows(int64_t m) { return m > 16 && m % 4 != 0 ? round_up(m, 8) : m; }

/// Columns worth padding: at least 32, and no block of 16 to 64 in whole 8-lane vectors divides
/// them.
int64_t padded_columns(int64_t n) {
  if (n < 32) return n;
  for (int64_t d = 16; d <= 64; d += 8)
    if (n % d == 0) return n;
  return round_up(n, 16);
}

/// `v` with zeros appended along `axis` up to `size`.
Expected<ValueId> pad_axis(Rewriter& rw, ValueId v, const Shape& shape, size_t axis, int64_t size,
                           const std::string& name) {
  graph::PadAttrs pad;
  pad.pads.assign(2 * shape.size(), 0);
  pad.pads[shape.size() + axis] = size - shape[axis];
  return rw.emit(OpKind::kPad, name, {v}, graph::to_attrs(pad));
}

/// The first `keep` of the last two axes of `v` (shape `shape`).
Expected<ValueId> slice_back(Rewriter& rw, ValueId v, const Shape& shape, int64_t rows,
                             int64_t columns, const std::string& name) {
  graph::SliceAttrs keep;
  const int64_t rank = static_cast<int64_t>(shape.size());
  keep.starts = {0, 0};
  keep.ends = {rows, columns};
  keep.axes = {rank - 2, rank - 1};
  keep.steps = {1, 1};
  return rw.emit(OpKind::kSlice, name, {v}, graph::to_attrs(keep));
}

/// The constant a dense's only reader adds per column (DenseFromMatMul's bias add, or a Gemm's),
/// as `columns` floats with zeros past its N; nothing otherwise.
std::optional<graph::Tensor> column_bias(const graph::Graph& g, const graph::Node* add,
                                         ValueId product, int64_t N, int64_t columns) {
  if (!add || add->op != OpKind::kAdd || add->inputs.size() != 2 ||
      add->inputs[0] == add->inputs[1] || g.type(add->output).shape != g.type(product).shape)
    return std::nullopt;
  const graph::Tensor* c = g.constant(add->inputs[0] == product ? add->inputs[1] : add->inputs[0]);
  if (!c || c->dtype != graph::DType::kFloat32 || c->shape.empty() || c->shape.back() != N ||
      graph::num_elements(c->shape) != N)
    return std::nullopt;
  graph::Tensor bias = graph::Tensor::zeros(graph::DType::kFloat32, {columns});
  std::copy(c->f32.begin(), c->f32.end(), bias.f32.begin());
  return bias;
}

/// `add`: the dense's only reader, or nullptr; set to nullptr when the padded dense did not take
/// it (the caller copies it then).
Status pad_dense(Rewriter& rw, const graph::Graph& g, const graph::Node& n,
                 const graph::Node*& add) {
  const Shape& x = g.type(n.inputs[0]).shape;
  const graph::Tensor* w = g.constant(n.inputs[1]);
  const int64_t M = x[0], N = g.type(n.inputs[1]).shape[0];
  const int64_t rows = padded_rows(M), columns = w ? padded_columns(N) : N;
  ValueId data = rw.map(n.inputs[0]), weight = rw.map(n.inputs[1]);
  if (rows != M) {
    TT_ASSIGN_OR_RETURN(data, pad_axis(rw, data, x, 0, rows, n.name + ".rows_padded"));
  }
  if (columns != N) {
    graph::Tensor wide = graph::Tensor::zeros(graph::DType::kFloat32, {columns, w->shape[1]});
    std::copy(w->f32.begin(), w->f32.end(), wide.f32.begin());
    weight = rw.out().add_constant(n.name + ".weight_padded", std::move(wide));
  }
  TT_ASSIGN_OR_RETURN(ValueId y, rw.emit(OpKind::kDense, n.name + ".padded", {data, weight}));
  // The bias joins the padded result, where the dense kernel's epilogue takes it; the slice
  // comes after.
  ValueId result = n.output;
  if (auto bias = column_bias(g, add, n.output, N, columns)) {
    const ValueId b = rw.out().add_constant(add->name + ".bias_padded", std::move(*bias));
    TT_ASSIGN_OR_RETURN(y, rw.emit(OpKind::kAdd, add->name + ".padded", {y, b}));
    result = add->output;
  } else {
    add = nullptr;
  }
  TT_ASSIGN_OR_RETURN(y, slice_back(rw, y, {rows, columns}, M, N,
                                    g.nodes()[static_cast<size_t>(g.value(result).producer)].name));
  rw.set(result, y);
  return ok_status();
}

Status pad_batch_matmul(Rewriter& rw, const graph::Graph& g, const graph::Node& n) {
  const Shape& a = g.type(n.inputs[0]).shape;
  const Shape& b = g.type(n.inputs[1]).shape;
  const size_t rank = a.size();
  const int64_t M = a[rank - 2], N = b[rank - 1];
  const int64_t rows = padded_rows(M), columns = padded_columns(N);
  ValueId x = rw.map(n.inputs[0]), w = rw.map(n.inputs[1]);
  if (rows != M) {
    TT_ASSIGN_OR_RETURN(x, pad_axis(rw, x, a, rank - 2, rows, n.name + ".rows_padded"));
  }
  if (columns != N) {
    TT_ASSIGN_OR_RETURN(w, pad_axis(rw, w, b, rank - 1, columns, n.name + ".columns_padded"));
  }
  Shape out = g.type(n.output).shape;
  out[rank - 2] = rows;
  out[rank - 1] = columns;
  TT_ASSIGN_OR_RETURN(ValueId y, rw.emit(OpKind::kMatMul, n.name + ".padded", {x, w}));
  TT_ASSIGN_OR_RETURN(y, slice_back(rw, y, out, M, N, n.name));
  rw.set(n.output, y);
  return ok_status();
}

Expected<graph::Graph> run(const graph::Graph& g) {
  Rewriter rw(g);
  const std::vector<int> reader = only_readers(g);
  std::vector<bool> absorbed(g.nodes().size(), false);
  for (const graph::Node& n : g.nodes()) {
    if (absorbed[static_cast<size_t>(&n - g.nodes().data())]) continue;
    const bool dense = n.op == OpKind::kDense && is_float_node(g, n) &&
                       g.type(n.inputs[0]).shape.size() == 2 &&
                       g.type(n.inputs[1]).shape.size() == 2;
    if (dense) {
      const int64_t M = g.type(n.inputs[0]).shape[0], N = g.type(n.inputs[1]).shape[0];
      const bool constant = g.is_constant(n.inputs[1]);
      if (padded_rows(M) != M || (constant && padded_columns(N) != N)) {
        const int next = reader[static_cast<size_t>(n.output)];
        const graph::Node* add = next >= 0 ? &g.nodes()[static_cast<size_t>(next)] : nullptr;
        TT_RETURN_IF_ERROR(pad_dense(rw, g, n, add));
        if (add) absorbed[static_cast<size_t>(add - g.nodes().data())] = true;
        continue;
      }
    } else if (batch_matmul_anchor(g, n)) {
      const Shape& a = g.type(n.inputs[0]).shape;
      const Shape& b = g.type(n.inputs[1]).shape;
      if (padded_rows(a[a.size() - 2]) != a[a.size() - 2] || padded_columns(b.back()) != b.back()) {
        TT_RETURN_IF_ERROR(pad_batch_matmul(rw, g, n));
        continue;
      }
    }
    TT_RETURN_IF_ERROR(rw.copy(n));
  }
  return rw.finish();
}

}  // namespace

schedule_space::BatchMatmulWorkload padded_batch_matmul(schedule_space::BatchMatmulWorkload w) {
  w.m = padded_rows(w.m);
  w.n = padded_columns(w.n);
  return w;
}

Pass pad_gemm_shapes() {
  return Pass{"PadGemmShapes",
              3,
              "a dense or batch matmul whose rows or columns no register tile divides computes "
              "them padded, then slices",
              {},
              run};
}

}  // namespace tensortune::passes
