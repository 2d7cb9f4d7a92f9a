// FoldScaleAxis. The rule that makes it exact: a scale only moves across an operator it
// commutes with. Multiply commutes with conv2d/dense on the channel axis for any sign;
// with a per-channel add after dividing the addend (scale != 0); with relu only when the
// scale is positive (relu(s*x) = s*relu(x) needs s >= 0; forward also crosses an add, so
// there s > 0). Nothing crosses pooling.
#include <map>
#include <optional>
#include <set>

#include "compiler/graph/op_attrs.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;
using graph::ValueId;

// The per-channel values (axis 1 of `x`) of a constant that broadcasts only along that axis;
// nullopt for anything else.
std::optional<std::vector<float>> channel_vector(const Graph& g, ValueId c, const Shape& x) {
  const Tensor* t = g.constant(c);
  if (!t || t->dtype != graph::DType::kFloat32 || x.size() < 2 || t->shape.size() > x.size())
    return std::nullopt;
  const int64_t channels = x[1];
  const size_t lead = x.size() - t->shape.size();
  bool per_channel = false;
  for (size_t i = 0; i < t->shape.size(); ++i) {
    const size_t axis = lead + i;
    if (t->shape[i] == 1) continue;
    if (axis != 1 || t->shape[i] != channels) return std::nullopt;
    per_channel = true;
  }
  std::vector<float> v(channels);
  for (int64_t k = 0; k < channels; ++k) v[k] = per_channel ? t->f32[k] : t->f32[0];
  return v;
}

// A binary op with one constant operand: (index of the other operand, the constant).
std::optional<std::pair<int, ValueId>> split_constant(const Graph& g, const Node& n) {
  if (g.is_constant(n.inputs[1]) && !g.is_constant(n.inputs[0])) return {{0, n.inputs[1]}};
  if (g.is_constant(n.inputs[0]) && !g.is_constant(n.inputs[1])) return {{1, n.inputs[0]}};
  return std::nullopt;
}

bool all_positive(const std::vector<float>& s) {
  for (float v : s)
    if (!(v > 0.0f)) return false;
  return true;
}
bool all_nonnegative(const std::vector<float>& s) {
  for (float v : s)
    if (!(v >= 0.0f)) return false;
  return true;
}
bool all_nonzero(const std::vector<float>& s) {
  for (float v : s)
    if (v == 0.0f) return false;
  return true;
}

class ScaleFolder {
 public:
  ScaleFolder(const Graph& g, FoldScaleAxisOptions options)
      : g_(g), options_(options), uses_(g.use_counts()), consumer_(g.values().size(), -1) {
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (ValueId in : g.nodes()[i].inputs) consumer_[in] = static_cast<int>(i);
  }

  Expected<Graph> run() {
    const auto& nodes = g_.nodes();
    for (int pass = 0; pass < 2; ++pass) {
      const bool backward = options_.unsafe_ignore_sign ? pass == 1 : pass == 0;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].op != OpKind::kMultiply || removed_.count(i)) continue;
        if (backward)
          try_backward(static_cast<int>(i));
        else
          try_forward(static_cast<int>(i));
      }
    }
    return rewrite();
  }

 private:
  int producer(ValueId v) const { return g_.value(v).producer; }
  bool single_use(ValueId v) const { return uses_[v] == 1; }

  // A conv2d or dense whose weight is a constant only it reads.
  bool scalable(int node) const {
    if (node < 0) return false;
    const Node& n = g_.nodes()[node];
    return (n.op == OpKind::kConv2d || n.op == OpKind::kDense) && g_.is_constant(n.inputs[1]) &&
           single_use(n.inputs[1]);
  }

  Tensor& weight(int node) {
    auto it = weights_.find(node);
    if (it == weights_.end())
      it = weights_.emplace(node, *g_.constant(g_.nodes()[node].inputs[1])).first;
    return it->second;
  }

  // multiply(y, s) with y = [relu](add(conv|dense, b) | conv|dense): s goes into the weights'
  // output channels and into b.
  void try_backward(int m) {
    const Node& mul = g_.nodes()[m];
    auto split = split_constant(g_, mul);
    if (!split) return;
    const ValueId y = mul.inputs[split->first];
    auto s = channel_vector(g_, split->second, g_.type(y).shape);
    if (!s || !single_use(y)) return;
    ValueId z = y;
    int relu = -1, bias_add = -1;
    if (int p = producer(z); p >= 0 && g_.nodes()[p].op == OpKind::kRelu) {
      if (!options_.unsafe_ignore_sign && !all_nonnegative(*s)) return;
      relu = p;
      z = g_.nodes()[p].inputs[0];
      if (!single_use(z)) return;
    }
    if (int p = producer(z); p >= 0 && g_.nodes()[p].op == OpKind::kAdd) {
      auto b = split_constant(g_, g_.nodes()[p]);
      if (!b || !channel_vector(g_, b->second, g_.type(z).shape)) return;
      bias_add = p;
      z = g_.nodes()[p].inputs[b->first];
      if (!single_use(z)) return;
    }
    const int anchor = producer(z);
    if (!scalable(anchor) || removed_.count(anchor)) return;
    (void)relu;
    scale_output_channels(weight(anchor), *s);
    if (bias_add >= 0) scale_addend(bias_add, *s, /*divide=*/false);
    removed_.insert(m);
  }

  // multiply(x, s) -> [add(., t)] -> [relu] -> conv2d|dense: s goes into the consumer's input
  // channels, t becomes t / s.
  void try_forward(int m) {
    const Node& mul = g_.nodes()[m];
    auto split = split_constant(g_, mul);
    if (!split) return;
    const ValueId x = mul.inputs[split->first];
    auto s = channel_vector(g_, split->second, g_.type(x).shape);
    if (!s || !all_nonzero(*s)) return;
    ValueId v = mul.output;
    int add = -1;
    for (;;) {
      if (!single_use(v)) return;
      const int c = consumer_[v];
      if (c < 0) return;
      const Node& n = g_.nodes()[c];
      if (n.op == OpKind::kAdd && add < 0) {
        auto t = split_constant(g_, n);
        if (!t || !channel_vector(g_, t->second, g_.type(v).shape)) return;
        add = c;
        v = n.output;
      } else if (n.op == OpKind::kRelu) {
        if (!options_.unsafe_ignore_sign && !all_positive(*s)) return;
        v = n.output;
      } else if (scalable(c) && n.inputs[0] == v && !removed_.count(c)) {
        scale_input_channels(c, *s);
        if (add >= 0) scale_addend(add, *s, /*divide=*/true);
        removed_.insert(m);
        return;
      } else {
        return;
      }
    }
  }

  static void scale_output_channels(Tensor& w, const std::vector<float>& s) {
    const int64_t inner = w.size() / w.shape[0];
    for (int64_t o = 0; o < w.shape[0]; ++o)
      for (int64_t k = 0; k < inner; ++k) w.f32[o * inner + k] *= s[o];
  }

  void scale_input_channels(int node, const std::vector<float>& s) {
    const Node& n = g_.nodes()[node];
    Tensor& w = weight(node);
    const int64_t out_channels = w.shape[0], in_per_group = w.shape[1];
    const int64_t groups =
        n.op == OpKind::kConv2d ? graph::attrs_as<graph::Conv2dAttrs>(n.attrs).groups : 1;
    const int64_t spatial = w.size() / (out_channels * in_per_group);
    for (int64_t o = 0; o < out_channels; ++o)
      for (int64_t i = 0; i < in_per_group; ++i) {
        const int64_t channel = o / (out_channels / groups) * in_per_group + i;
        float* p = &w.f32[(o * in_per_group + i) * spatial];
        for (int64_t k = 0; k < spatial; ++k) p[k] *= s[channel];
      }
  }

  void scale_addend(int node, const std::vector<float>& s, bool divide) {
    const Node& n = g_.nodes()[node];
    auto split = split_constant(g_, n);
    const Shape& x = g_.type(n.output).shape;
    auto b = channel_vector(g_, split->second, x);
    Shape shape{static_cast<int64_t>(s.size())};
    for (size_t i = 2; i < x.size(); ++i) shape.push_back(1);
    Tensor t = Tensor::zeros(graph::DType::kFloat32, shape);
    for (size_t c = 0; c < s.size(); ++c) t.f32[c] = divide ? (*b)[c] / s[c] : (*b)[c] * s[c];
    addends_[node] = std::move(t);
  }

  Expected<Graph> rewrite() {
    Rewriter rw(g_);
    const auto& nodes = g_.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (removed_.count(i)) {
        rw.set(n.output, rw.map(n.inputs[split_constant(g_, n)->first]));
        continue;
      }
      auto w = weights_.find(i);
      auto a = addends_.find(i);
      if (w == weights_.end() && a == addends_.end()) {
        TT_RETURN_IF_ERROR(rw.copy(n));
        continue;
      }
      std::vector<ValueId> inputs;
      for (ValueId in : n.inputs) inputs.push_back(rw.map(in));
      if (w != weights_.end())
        inputs[1] = rw.out().add_constant(g_.value(n.inputs[1]).name + ".folded", w->second);
      if (a != addends_.end()) {
        const int k = split_constant(g_, n)->first == 0 ? 1 : 0;
        inputs[k] = rw.out().add_constant(g_.value(n.inputs[k]).name + ".folded", a->second);
      }
      TT_ASSIGN_OR_RETURN(ValueId id, rw.emit(n.op, n.name, std::move(inputs), n.attrs));
      rw.set(n.output, id);
    }
    return rw.finish();
  }

  const Graph& g_;
  FoldScaleAxisOptions options_;
  std::vector<int> uses_;
  std::vector<int> consumer_;  // meaningful only for single-use values
  std::set<size_t> removed_;
  std::map<size_t, Tensor> weights_;
  std::map<size_t, Tensor> addends_;
};

}  // namespace

Pass fold_scale_axis(FoldScaleAxisOptions options) {
  return Pass{"FoldScaleAxis",
              3,
              "per-channel constant scales are folded into conv2d/dense weights, never across "
              "an operator they do not commute with",
              {simplify_inference()},
              [options](const Graph& g) { return ScaleFolder(g, options).run(); }};
}

}  // namespace tensortune::passes
