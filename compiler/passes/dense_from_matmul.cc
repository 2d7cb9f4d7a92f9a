// DenseFromMatMul: exporters write a linear layer on a sequence ([batch, tokens, K] times a
// [K, N] weight, a transformer's projections and MLP) as MatMul, which has no generated kernel.
// With the weight constant (after FoldConstant) it is a dense over the activation's rows, the
// generated and tuned kernel: reshape to [M, K], dense with the weight transposed once here
// ([N, K], dense's layout), reshape back. A bias added right after it (a constant along the last
// axis) is added before the reshape back, so that the dense kernel's epilogue takes it.
#include <optional>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::OpKind;
using graph::Shape;

/// An add of a constant that varies along the last axis only (a linear layer's bias, as
/// exporters write it after the MatMul): as a vector of `n` floats; nothing otherwise.
std::optional<graph::Tensor> bias_of(const graph::Graph& g, const graph::Node& add,
                                     graph::ValueId product, int64_t n) {
  if (add.op != OpKind::kAdd || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1])
    return std::nullopt;
  const graph::Tensor* c = g.constant(add.inputs[0] == product ? add.inputs[1] : add.inputs[0]);
  if (!c || c->dtype != graph::DType::kFloat32 || c->shape.empty() || c->shape.back() != n ||
      graph::num_elements(c->shape) != n || c->shape.size() > g.type(product).shape.size())
    return std::nullopt;
  graph::Tensor bias = *c;
  bias.shape = {n};
  return bias;
}

Expected<graph::Graph> run(const graph::Graph& g) {
  Rewriter rw(g);
  const std::vector<int> reader = only_readers(g);
  std::vector<bool> absorbed(g.nodes().size(), false);
  for (const graph::Node& n : g.nodes()) {
    if (absorbed[static_cast<size_t>(&n - g.nodes().data())]) continue;
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
    // The bias added after the MatMul joins the dense's rows, before the reshape back, where
    // the dense kernel's epilogue takes it.
    graph::ValueId result = n.output;
    const int next = reader[static_cast<size_t>(n.output)];
    if (const graph::Node* add = as.size() != 2 && next >= 0 ? &g.nodes()[next] : nullptr)
      if (auto bias = bias_of(g, *add, n.output, N)) {
        const graph::ValueId b = rw.out().add_constant(add->name + ".bias", std::move(*bias));
        TT_ASSIGN_OR_RETURN(y, rw.emit(OpKind::kAdd, add->name, {y, b}));
        absorbed[static_cast<size_t>(add - g.nodes().data())] = true;
        result = add->output;
      }
    if (as.size() != 2) {
      TT_ASSIGN_OR_RETURN(y, rw.emit(OpKind::kReshape, n.name + ".unrows", {y},
                                     graph::Attrs{{"shape", g.type(result).shape}}));
    }
    rw.set(result, y);
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
