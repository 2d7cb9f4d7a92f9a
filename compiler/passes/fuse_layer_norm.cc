// FuseLayerNorm: opsets before 17 have no LayerNormalization, so exporters write it as its
// chain: mean = ReduceMean(x), d = x - mean, var = ReduceMean(d * d) (or Pow(d, 2)),
// y = d / Sqrt(var + eps), then * gamma + beta. Recognised here (the reductions over the same
// trailing axes, eps, gamma and beta constants, every intermediate read only inside the chain),
// it becomes one layer_norm node: one pass over each row instead of two reductions and three
// element-wise kernels with their round trips through memory.
#include "compiler/graph/op_attrs.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::ValueId;

struct Match {
  ValueId x = graph::kNoValue, gamma = graph::kNoValue, beta = graph::kNoValue;
  int64_t axis = -1;
  double epsilon = 0;
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), uses_(g.use_counts()) {}

  // The chain ending at `n` (its Div, the Mul by gamma after it, or the Add of beta after that).
  std::optional<Match> at(const Node& n) const {
    if (n.op == OpKind::kAdd) {  // (... * gamma) + beta
      for (int i = 0; i < 2; ++i) {
        const Node* scaled = producer(n.inputs[i], OpKind::kMultiply);
        const ValueId beta = n.inputs[1 - i];
        if (!scaled || !vector_constant(beta) || uses_[n.inputs[i]] != 1) continue;
        if (auto m = scaled_chain(*scaled)) {
          m->beta = beta;
          return m;
        }
      }
      return std::nullopt;
    }
    if (n.op == OpKind::kMultiply) return scaled_chain(n);
    if (n.op == OpKind::kDivide) return normalised(n);
    return std::nullopt;
  }

 private:
  const Node* producer(ValueId v, OpKind op) const { return producer_of(g_, v, op); }
  bool vector_constant(ValueId v) const {
    const graph::Tensor* t = g_.constant(v);
    return t && t->dtype == graph::DType::kFloat32;
  }
  // d / gamma-less chain * gamma.
  std::optional<Match> scaled_chain(const Node& mul) const {
    for (int i = 0; i < 2; ++i) {
      const Node* div = producer(mul.inputs[i], OpKind::kDivide);
      if (!div || !vector_constant(mul.inputs[1 - i]) || uses_[mul.inputs[i]] != 1) continue;
      if (auto m = normalised(*div)) {
        m->gamma = mul.inputs[1 - i];
        return m;
      }
    }
    return std::nullopt;
  }
  // The axes of a keepdims reduce_mean over trailing axes, as the first of them; -1 otherwise.
  int64_t trailing_mean_axis(const Node& r) const {
    const auto a = graph::attrs_as<graph::ReduceAttrs>(r.attrs);
    const int64_t rank = g_.type(r.inputs[0]).shape.size();
    if (!a.keepdims || a.axes.empty() || a.axes.back() != rank - 1) return -1;
    for (size_t i = 1; i < a.axes.size(); ++i)
      if (a.axes[i] != a.axes[i - 1] + 1) return -1;
    return a.axes.front();
  }
  // (x - mean(x)) / sqrt(mean((x - mean)^2) + eps).
  std::optional<Match> normalised(const Node& div) const {
    const Node* sub = producer(div.inputs[0], OpKind::kSubtract);
    const Node* root = producer(div.inputs[1], OpKind::kSqrt);
    if (!sub || !root || uses_[div.inputs[1]] != 1) return std::nullopt;
    const ValueId d = div.inputs[0], x = sub->inputs[0];
    const Node* mean = producer(sub->inputs[1], OpKind::kReduceMean);
    if (!mean || mean->inputs[0] != x || uses_[sub->inputs[1]] != 1) return std::nullopt;
    const int64_t axis = trailing_mean_axis(*mean);
    const Node* shifted = producer(root->inputs[0], OpKind::kAdd);
    if (axis < 0 || !shifted || uses_[root->inputs[0]] != 1) return std::nullopt;
    for (int i = 0; i < 2; ++i) {
      const graph::Tensor* eps = g_.constant(shifted->inputs[1 - i]);
      const Node* var = producer(shifted->inputs[i], OpKind::kReduceMean);
      if (!eps || eps->size() != 1 || !graph::is_float(eps->dtype) || !var) continue;
      if (uses_[shifted->inputs[i]] != 1 || trailing_mean_axis(*var) != axis) continue;
      const Node* square = producer(var->inputs[0], OpKind::kMultiply);
      if (!square || square->inputs[0] != d || square->inputs[1] != d) continue;
      // d is read by the square (twice) and the division, nothing else.
      if (uses_[var->inputs[0]] != 1 || uses_[d] != 3) continue;
      return Match{x, graph::kNoValue, graph::kNoValue, axis, eps->f32[0]};
    }
    return std::nullopt;
  }

  const Graph& g_;
  std::vector<int> uses_;
};

Expected<Graph> run(const Graph& g) {
  Matcher matcher(g);
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    TT_RETURN_IF_ERROR(rw.copy(n));
    const auto m = matcher.at(n);
    if (!m || g.type(m->x).dtype != graph::DType::kFloat32) continue;
    // Without gamma the scale is ones over the normalised axes.
    ValueId gamma = m->gamma != graph::kNoValue ? rw.map(m->gamma) : graph::kNoValue;
    if (gamma == graph::kNoValue) {
      const graph::Shape& xs = g.type(m->x).shape;
      graph::Shape inner(xs.begin() + m->axis, xs.end());
      graph::Tensor ones = graph::Tensor::zeros(graph::DType::kFloat32, inner);
      std::fill(ones.f32.begin(), ones.f32.end(), 1.0f);
      gamma = rw.out().add_constant(n.name + ".ones", std::move(ones));
    }
    std::vector<ValueId> inputs = {rw.map(m->x), gamma};
    if (m->beta != graph::kNoValue) inputs.push_back(rw.map(m->beta));
    graph::LayerNormAttrs attrs;
    attrs.axis = m->axis;
    attrs.epsilon = m->epsilon;
    auto y = rw.emit(OpKind::kLayerNorm, n.name + ".layer_norm", inputs, graph::to_attrs(attrs));
    if (!y) continue;  // gamma or beta that do not broadcast: keep the chain
    rw.set(n.output, *y);
  }
  return rw.finish();
}

}  // namespace

Pass fuse_layer_norm() {
  return Pass{"FuseLayerNorm",
              3,
              "LayerNorm's exported chain (two reduce_means over the trailing axes, sqrt, "
              "divide, then * gamma + beta) becomes one layer_norm node",
              {},
              run};
}

}  // namespace tensortune::passes
