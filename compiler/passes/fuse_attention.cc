// FuseAttention: exporters write attention as MatMul(q, k^T), a scale (Mul or Div by a scalar, of
// the scores or of q and k^T before the matmul), an additive mask (or a causal one written with
// Where), Softmax over the keys and MatMul by v. Two batch matmuls with the scores stored between
// them, a softmax reading them back: as one attention node a kernel computes each row's scores,
// their softmax and its product with v in registers and L1 (an online softmax), and the scores
// never reach memory.
#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::ValueId;

struct Match {
  ValueId q = graph::kNoValue, k = graph::kNoValue, v = graph::kNoValue;
  /// The masks added to the scores (a model's own, and a ranged artifact's padding mask after
  /// it): one node adds them up where there are several.
  std::vector<ValueId> masks;
  /// Where(c, scores, fill) by a constant condition and a fill of -1e30 or less (a causal mask,
  /// as GPT-2 exports it) as the additive mask where(c, 0, fill): scores + fill rounds to fill
  /// for any score of magnitude below 1e22, and both are 0 after the softmax.
  std::vector<graph::Tensor> constant_masks;
  double scale = 1.0;
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), uses_(g.use_counts()) {}

  // The chain ending at `n`, the matmul of the softmax's result by v.
  std::optional<Match> at(const Node& n) const {
    if (!is_matmul(n)) return std::nullopt;
    const Node* softmax = producer(n.inputs[0], OpKind::kSoftmax);
    if (!softmax || !only_read_once(n.inputs[0])) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(g_.type(softmax->output).shape.size());
    if (graph::normalize_axis(graph::attrs_as<graph::SoftmaxAttrs>(softmax->attrs).axis, rank) !=
        rank - 1)
      return std::nullopt;
    auto m = masked(softmax->inputs[0]);
    if (!m) return std::nullopt;
    m->v = n.inputs[1];
    return m;
  }

 private:
  const Node* producer(ValueId v, OpKind op) const { return producer_of(g_, v, op); }
  bool only_read_once(ValueId v) const { return uses_[static_cast<size_t>(v)] == 1; }
  bool is_matmul(const Node& n) const {
    return n.op == OpKind::kMatMul && n.inputs.size() == 2 && is_float_node(g_, n);
  }
  // A float32 constant of one element.
  std::optional<double> scalar(ValueId v) const {
    const graph::Tensor* t = g_.constant(v);
    if (!t || t->dtype != graph::DType::kFloat32 || t->size() != 1) return std::nullopt;
    return t->f32[0];
  }

  // scores + masks, or the scores alone.
  std::optional<Match> masked(ValueId x) const {
    if (!only_read_once(x)) return std::nullopt;
    if (const Node* add = producer(x, OpKind::kAdd); add && add->inputs.size() == 2) {
      for (int i = 0; i < 2; ++i) {
        const ValueId mask = add->inputs[1 - i];
        if (g_.type(mask).dtype != graph::DType::kFloat32) continue;
        if (auto m = masked(add->inputs[i])) {
          m->masks.push_back(mask);
          return m;
        }
      }
      return std::nullopt;
    }
    if (const Node* where = producer(x, OpKind::kWhere); where && where->inputs.size() == 3) {
      const graph::Tensor* cond = g_.constant(where->inputs[0]);
      const auto fill = scalar(where->inputs[2]);
      if (!cond || cond->dtype != graph::DType::kBool || !fill || !(*fill <= -1e30))
        return std::nullopt;
      auto m = masked(where->inputs[1]);
      if (!m) return std::nullopt;
      graph::Tensor mask = graph::Tensor::zeros(graph::DType::kFloat32, cond->shape);
      for (size_t i = 0; i < mask.f32.size(); ++i)
        mask.f32[i] = cond->i64[i] != 0 ? 0.0f : static_cast<float>(*fill);
      m->constant_masks.push_back(std::move(mask));
      return m;
    }
    return scaled(x);
  }

  // q k times or divided by a scalar, or q k alone (its operands perhaps scaled: `unscaled`).
  std::optional<Match> scaled(ValueId x) const {
    if (!only_read_once(x)) return std::nullopt;
    const int p = g_.value(x).producer;
    if (p < 0) return std::nullopt;
    const Node& n = g_.nodes()[p];
    if (n.op == OpKind::kMultiply && n.inputs.size() == 2) {
      for (int i = 0; i < 2; ++i)
        if (auto c = scalar(n.inputs[1 - i]))
          if (auto m = product(n.inputs[i])) {
            m->scale *= *c;
            return m;
          }
      return std::nullopt;
    }
    if (n.op == OpKind::kDivide && n.inputs.size() == 2) {
      const auto c = scalar(n.inputs[1]);
      if (!c || *c == 0) return std::nullopt;
      auto m = product(n.inputs[0]);
      if (m) m->scale /= *c;
      return m;
    }
    return product(x);
  }

  std::optional<Match> product(ValueId x) const {
    const int p = g_.value(x).producer;
    if (p < 0 || !only_read_once(x) || !is_matmul(g_.nodes()[p])) return std::nullopt;
    const Node& n = g_.nodes()[p];
    Match m;
    m.q = unscaled(n.inputs[0], &m.scale);
    m.k = unscaled(n.inputs[1], &m.scale);
    return m;
  }

  // An operand of q k times or divided by a scalar that nothing else reads (torch's
  // MultiheadAttention divides q; its scaled_dot_product_attention export multiplies q and k^T
  // each by the scale's square root): the operand before it, the scalar folded into `scale`
  // (exactly where it is a power of two, as 1/8 for 64 values a head; otherwise the product is
  // rounded once instead of the operand's every element).
  ValueId unscaled(ValueId x, double* scale) const {
    const int p = g_.value(x).producer;
    if (p < 0 || !only_read_once(x)) return x;
    const Node& n = g_.nodes()[p];
    if (n.inputs.size() != 2 || !is_float_node(g_, n)) return x;
    if (n.op == OpKind::kMultiply) {
      for (int i = 0; i < 2; ++i)
        if (auto c = scalar(n.inputs[1 - i]); c && g_.type(n.inputs[i]).shape == g_.type(x).shape) {
          *scale *= *c;
          return n.inputs[i];
        }
    } else if (n.op == OpKind::kDivide) {
      if (auto c = scalar(n.inputs[1]);
          c && *c != 0 && g_.type(n.inputs[0]).shape == g_.type(x).shape) {
        *scale /= *c;
        return n.inputs[0];
      }
    }
    return x;
  }

  const Graph& g_;
  std::vector<int> uses_;
};

Expected<Graph> run(const Graph& g,
                    const std::function<bool(const schedule_space::Workload&)>& served) {
  Matcher matcher(g);
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    TT_RETURN_IF_ERROR(rw.copy(n));
    const auto m = matcher.at(n);
    if (!m) continue;
    // The masks' sum broadcasts to the shape numpy's rules give them together.
    std::vector<graph::Shape> shapes;
    for (ValueId v : m->masks) shapes.push_back(g.type(v).shape);
    for (const graph::Tensor& t : m->constant_masks) shapes.push_back(t.shape);
    graph::Shape mask_shape;
    bool broadcast = true;
    for (size_t i = 0; i < shapes.size() && broadcast; ++i)
      broadcast = i == 0
                      ? (mask_shape = shapes[i], true)
                      : graph::broadcast_shapes(graph::Shape(mask_shape), shapes[i], &mask_shape);
    if (!broadcast) continue;
    const graph::Shape* mask = shapes.empty() ? nullptr : &mask_shape;
    const auto w = attention_workload(g.type(m->q).shape, g.type(m->k).shape, g.type(m->v).shape,
                                      mask, m->scale);
    if (!w || !served(*w)) continue;
    std::vector<ValueId> inputs = {rw.map(m->q), rw.map(m->k), rw.map(m->v)};
    if (mask) {
      std::vector<ValueId> parts;
      for (ValueId v : m->masks) parts.push_back(rw.map(v));
      for (size_t i = 0; i < m->constant_masks.size(); ++i)
        parts.push_back(rw.out().add_constant(n.name + ".causal_mask" + std::to_string(i),
                                              m->constant_masks[i]));
      ValueId sum = parts[0];
      for (size_t i = 1; i < parts.size() && sum != graph::kNoValue; ++i) {
        auto added = rw.emit(OpKind::kAdd, n.name + ".mask" + std::to_string(i), {sum, parts[i]});
        sum = added ? *added : graph::kNoValue;
      }
      if (sum == graph::kNoValue) continue;
      inputs.push_back(sum);
    }
    graph::AttentionAttrs attrs;
    attrs.scale = m->scale;
    auto y = rw.emit(OpKind::kAttention, n.name + ".attention", inputs, graph::to_attrs(attrs));
    if (!y) continue;  // shapes the node refuses: keep the chain
    rw.set(n.output, *y);
  }
  return rw.finish();
}

}  // namespace

Pass fuse_attention(std::function<bool(const schedule_space::Workload&)> served) {
  return Pass{"FuseAttention",
              3,
              "matmul(q, k) [* or / a scalar] [+ mask] -> softmax over the keys -> matmul by v "
              "becomes one attention node where a template of the target computes it",
              {},
              [served](const Graph& g) { return run(g, served); }};
}

}  // namespace tensortune::passes
