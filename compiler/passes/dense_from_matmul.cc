// DenseFromMatMul: exporters write a linear layer on a sequence ([batch, tokens, K] times a
// [K, N] weight, a transformer's projections and MLP) as MatMul, which has no generated kernel.
// With the weight constant (after FoldConstant) it is a dense over the activation's rows, the
// generated and tuned kernel: reshape to [M, K], dense with the weight transposed once here
// ([N, K], dense's layout), reshape back.
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::OpKind;
using graph::Shape;

Expected<graph::Graph> run(const graph::Graph& g) {
  Rewriter rw(g);
  for (const graph::Node& n : g.nodes()) {
    const graph::Tensor* weight = n.op == OpKind::kMatMul ? g.constant(n.inputs[1]) : nullptr;
    const Shape& as = g.type(n.inputs[0]).shape;
    if (!weight || weight->dtype != graph::DType::kFloat32 || weight->shape.size() != 2 ||
        g.type(n.inputs[0]).dtype != graph::DType::kFloat32 || as.size() < 2 ||
        as.back() != weight->shape[0]) {
      TT_RETURN_IF_ERROR(rw.copy(n));
      continue;
    }
    const int64_t K = weight->shape[0], N = weight->shape[1];
    graph::Tensor transposed = graph::Tensor::zeros(graph::DType::kFloat32, {N, K});
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) transposed.f32[j * K + k] = weight->f32[k * N + j];
    const graph::ValueId w = rw.out().add_constant(n.name + ".weight_t", std::move(transposed));
    graph::ValueId rows = rw.map(n.inputs[0]);
    const int64_t M = graph::num_elements(Shape(as.begin(), as.end() - 1));
    if (as.size() != 2) {
      TT_ASSIGN_OR_RETURN(rows, rw.emit(OpKind::kReshape, n.name + ".rows", {rows},
                                        graph::Attrs{{"shape", Shape{M, K}}}));
    }
    TT_ASSIGN_OR_RETURN(graph::ValueId y, rw.emit(OpKind::kDense, n.name, {rows, w}));
    if (as.size() != 2) {
      TT_ASSIGN_OR_RETURN(y, rw.emit(OpKind::kReshape, n.name + ".unrows", {y},
                                     graph::Attrs{{"shape", g.type(n.output).shape}}));
    }
    rw.set(n.output, y);
  }
  return rw.finish();
}

}  // namespace

Pass dense_from_matmul() {
  return Pass{"DenseFromMatMul",
              3,
              "a float matmul by a constant 2-D weight becomes reshape + dense + reshape",
              {},
              run};
}

}  // namespace tensortune::passes
