// FuseGelu: exporters before opset 20 (which has Gelu) write GELU as its formula, x * 0.5 * (1 +
// erf(x / sqrt 2)) or the tanh approximation x * 0.5 * (1 + tanh(sqrt(2 / pi) (x + 0.044715
// x^3))) (GPT-2's), five to nine nodes in one of several orders that read x more than once, a
// diamond no kernel's epilogue chain can take. Recognised here (the constants within float
// rounding, every intermediate read only inside the formula), it becomes one gelu node.
//
// A GELU (recognised or imported) whose input is a reshape or a prefix slice of a value read
// nowhere else is computed before them: GELU is element-wise, so gelu(view(y)) = view(gelu(y)),
// and so it meets the dense producing y (DenseFromMatMul's reshape back, PadGemmShapes' slice of
// the padded rows) and joins its epilogue (FuseOpsOptions::gelu_in_epilogue) instead of a
// round trip of the whole activation through memory. The padded rows it computes too are the
// ones the slice drops.
#include <cmath>
#include <optional>

#include "compiler/graph/memory_plan.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::ValueId;

/// A GELU's formula found: its input, which form, and how often the formula reads x.
struct Match {
  ValueId x = graph::kNoValue;
  bool tanh = false;
  int reads = 0;
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), uses_(g.use_counts()) {}

  /// The GELU whose last multiply is `n`; nothing otherwise. The three ways of multiplying x,
  /// 0.5 and a = (1 + erf) or (1 + tanh): (x * a) * 0.5, (a * 0.5) * x, (x * 0.5) * a.
  std::optional<Match> at(const Node& n) const {
    if (n.op != OpKind::kMultiply || n.inputs.size() != 2) return std::nullopt;
    for (int i = 0; i < 2; ++i) {
      const ValueId s = n.inputs[i], o = n.inputs[1 - i];
      const Node* m = single_use(o, OpKind::kMultiply);
      if (scalar(s, 0.5) && m)  // (x * a) * 0.5
        for (int j = 0; j < 2; ++j)
          if (auto f = one_plus(m->inputs[j]); f && m->inputs[1 - j] == f->x) return f;
      const Node* h = single_use(s, OpKind::kMultiply);
      if (!h) continue;
      for (int j = 0; j < 2; ++j) {
        if (!scalar(h->inputs[1 - j], 0.5)) continue;
        const ValueId t = h->inputs[j];
        if (auto f = one_plus(t); f && o == f->x) return f;  // (a * 0.5) * x
        if (auto f = one_plus(o); f && t == f->x) return f;  // (x * 0.5) * a
      }
    }
    return std::nullopt;
  }

  const std::vector<int>& uses() const { return uses_; }

 private:
  /// The `op` node computing `v` where v is read once, with the operands the formula's nodes
  /// have (erf and tanh one, the others two); nullptr otherwise.
  const Node* single_use(ValueId v, OpKind op) const {
    const Node* n = uses_[v] == 1 ? producer_of(g_, v, op) : nullptr;
    const size_t operands = op == OpKind::kErf || op == OpKind::kTanh ? 1 : 2;
    return n && n->inputs.size() == operands ? n : nullptr;
  }
  bool scalar(ValueId v, double want) const {
    const graph::Tensor* t = g_.constant(v);
    return t && t->dtype == graph::DType::kFloat32 && t->size() == 1 &&
           std::abs(t->f32[0] - want) <= 1e-6 * want;
  }
  /// `a` as 1 + erf(x / sqrt 2) or 1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)), the reads of x
  /// counted with the outer multiply's.
  std::optional<Match> one_plus(ValueId a) const {
    const Node* add = single_use(a, OpKind::kAdd);
    if (!add) return std::nullopt;
    for (int i = 0; i < 2; ++i) {
      if (!scalar(add->inputs[1 - i], 1.0)) continue;
      if (const Node* erf = single_use(add->inputs[i], OpKind::kErf))
        if (auto x = scaled(erf->inputs[0], M_SQRT1_2)) return Match{*x, false, 2};
      if (const Node* tanh = single_use(add->inputs[i], OpKind::kTanh))
        if (auto m = tanh_argument(tanh->inputs[0])) return m;
    }
    return std::nullopt;
  }
  /// x where `u` is x * c (either order) or x / (1 / c).
  std::optional<ValueId> scaled(ValueId u, double c) const {
    if (const Node* div = single_use(u, OpKind::kDivide); div && scalar(div->inputs[1], 1 / c))
      return div->inputs[0];
    if (const Node* mul = single_use(u, OpKind::kMultiply))
      for (int j = 0; j < 2; ++j)
        if (scalar(mul->inputs[1 - j], c)) return mul->inputs[j];
    return std::nullopt;
  }
  /// sqrt(2 / pi) (x + 0.044715 x^3), x^3 as x * (x * x) in either order or pow(x, 3).
  std::optional<Match> tanh_argument(ValueId w) const {
    const auto s = scaled(w, std::sqrt(2 / M_PI));
    const Node* sum = s ? single_use(*s, OpKind::kAdd) : nullptr;
    if (!sum) return std::nullopt;
    for (int i = 0; i < 2; ++i) {
      const ValueId x = sum->inputs[i];
      const auto cube = scaled(sum->inputs[1 - i], 0.044715);
      if (!cube) continue;
      if (const Node* pow = single_use(*cube, OpKind::kPow);
          pow && pow->inputs[0] == x && scalar(pow->inputs[1], 3.0))
        return Match{x, true, 3};
      const Node* outer = single_use(*cube, OpKind::kMultiply);
      if (!outer) continue;
      for (int j = 0; j < 2; ++j) {
        const Node* square = single_use(outer->inputs[1 - j], OpKind::kMultiply);
        if (outer->inputs[j] == x && square && square->inputs[0] == x && square->inputs[1] == x)
          return Match{x, true, 5};
      }
    }
    return std::nullopt;
  }

  const Graph& g_;
  std::vector<int> uses_;
};

/// The reshapes and prefix slices that make `x` from a value read by them alone, the first
/// (nearest that value) first; `x` itself must be read by the GELU only (`gelu_reads` times).
std::vector<const Node*> views_above(const Graph& g, const std::vector<int>& uses, ValueId x,
                                     int gelu_reads) {
  std::vector<const Node*> views;
  if (uses[x] != gelu_reads) return views;
  for (ValueId v = x;;) {
    const int p = g.value(v).producer;
    if (p < 0) break;
    const Node& view = g.nodes()[static_cast<size_t>(p)];
    // A slice that keeps less than half its input would have the GELU compute more than it saves.
    const bool is_view =
        graph::is_view_op(view.op) ||
        (graph::is_prefix_slice(g, view) && 2 * graph::num_elements(g.type(view.output).shape) >=
                                                graph::num_elements(g.type(view.inputs[0]).shape));
    if (!is_view || view.inputs.empty() || uses[view.inputs[0]] != 1) break;
    views.insert(views.begin(), &view);
    v = view.inputs[0];
  }
  return views;
}

Expected<Graph> run(const Graph& g) {
  const Matcher matcher(g);
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    TT_RETURN_IF_ERROR(rw.copy(n));
    const bool imported = n.op == OpKind::kGelu;
    std::optional<Match> m = matcher.at(n);
    if (imported) m = Match{n.inputs[0], graph::attrs_as<graph::GeluAttrs>(n.attrs).tanh != 0, 1};
    if (!m || g.type(m->x).dtype != graph::DType::kFloat32) continue;
    const std::vector<const Node*> views = views_above(g, matcher.uses(), m->x, m->reads);
    if (imported && views.empty()) continue;  // already where it can be
    const ValueId source = views.empty() ? m->x : views.front()->inputs[0];
    graph::GeluAttrs attrs;
    attrs.tanh = m->tanh;
    TT_ASSIGN_OR_RETURN(ValueId y, rw.emit(OpKind::kGelu, n.name + ".gelu", {rw.map(source)},
                                           graph::to_attrs(attrs)));
    for (const Node* view : views) {
      TT_ASSIGN_OR_RETURN(y, rw.emit(view->op, view->name + ".after_gelu", {y}, view->attrs));
    }
    rw.set(n.output, y);
  }
  return rw.finish();
}

}  // namespace

Pass fuse_gelu() {
  return Pass{"FuseGelu",
              3,
              "GELU's exported formula (erf or tanh) becomes one gelu node, computed before the "
              "reshapes and prefix slices between it and its producer",
              {},
              run};
}

}  // namespace tensortune::passes
