#include <cmath>

#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::Node;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;
using graph::ValueId;

// [C] -> [C, 1, ..., 1] so that it broadcasts along axis `axis` of a rank-`rank` tensor.
Shape channel_shape(int64_t channels, int64_t rank, int64_t axis) {
  Shape s{channels};
  for (int64_t i = axis + 1; i < rank; ++i) s.push_back(1);
  return s;
}

Expected<graph::Graph> run(const graph::Graph& g) {
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    const int64_t rank = g.type(n.output).shape.size();
    if (n.op == OpKind::kIdentity) {
      rw.set(n.output, rw.map(n.inputs[0]));
      continue;
    }
    const bool constant_params = n.op == OpKind::kBatchNorm && g.is_constant(n.inputs[1]) &&
                                 g.is_constant(n.inputs[2]) && g.is_constant(n.inputs[3]) &&
                                 g.is_constant(n.inputs[4]);
    if (constant_params) {
      const Tensor &gamma = *g.constant(n.inputs[1]), &beta = *g.constant(n.inputs[2]);
      const Tensor &mean = *g.constant(n.inputs[3]), &var = *g.constant(n.inputs[4]);
      const double eps = graph::attrs_as<graph::BatchNormAttrs>(n.attrs).epsilon;
      const int64_t c = gamma.size();
      Tensor scale = Tensor::zeros(graph::DType::kFloat32, channel_shape(c, rank, 1));
      Tensor shift = scale;
      for (int64_t i = 0; i < c; ++i) {
        const double s = gamma.f32[i] / std::sqrt(double(var.f32[i]) + eps);
        scale.f32[i] = static_cast<float>(s);
        shift.f32[i] = static_cast<float>(beta.f32[i] - mean.f32[i] * s);
      }
      ValueId sv = rw.out().add_constant(n.name + ".scale", std::move(scale));
      ValueId tv = rw.out().add_constant(n.name + ".shift", std::move(shift));
      TT_ASSIGN_OR_RETURN(ValueId m,
                          rw.emit(OpKind::kMultiply, n.name + ".mul", {rw.map(n.inputs[0]), sv}));
      TT_ASSIGN_OR_RETURN(ValueId a, rw.emit(OpKind::kAdd, n.name, {m, tv}));
      rw.set(n.output, a);
      continue;
    }
    if (n.op == OpKind::kBiasAdd) {
      const int64_t axis =
          graph::normalize_axis(graph::attrs_as<graph::BiasAddAttrs>(n.attrs).axis, rank);
      const ValueId bias = n.inputs[1];
      const Shape target = channel_shape(g.type(bias).shape[0], rank, axis);
      ValueId b;
      if (g.is_constant(bias)) {
        Tensor t = *g.constant(bias);
        t.shape = target;
        b = rw.out().add_constant(g.value(bias).name, std::move(t));
      } else {
        TT_ASSIGN_OR_RETURN(b, rw.emit(OpKind::kReshape, n.name + ".reshape", {rw.map(bias)},
                                       graph::to_attrs(graph::ReshapeAttrs{target})));
      }
      TT_ASSIGN_OR_RETURN(ValueId a, rw.emit(OpKind::kAdd, n.name, {rw.map(n.inputs[0]), b}));
      rw.set(n.output, a);
      continue;
    }
    TT_RETURN_IF_ERROR(rw.copy(n));
  }
  return rw.finish();
}

}  // namespace

Pass simplify_inference() {
  return Pass{"SimplifyInference",
              0,
              "batch_norm becomes a per-channel multiply and add; bias_add a broadcast add; "
              "identities vanish",
              {},
              run};
}

}  // namespace tensortune::passes
