// ResidualsAsBytes: in a quantized residual network every block's output is quantized and
// dequantized (QDQ), dq = (S - z) * s with S the integral value in [0, 255], and the next
// block's sum adds dq in float. Its first convolution reads the bytes of S (FakeQuantization-
// ToInteger requantizes dq into them), while the sum read dq itself: the kernel computing dq
// stored it midway as float32, four bytes per element, for the add to read back, at batch 1 the
// largest memory traffic of an int8 ResNet. The sum can read the bytes instead: dq is exactly
// (float(B) - z) * s for the bytes B = S, so each such add reads a dequantization of B, which
// FuseOps folds into the adding kernel (fusion_rules.h's dequantized_bytes) and the float is
// never stored. Where no kernel reads the bytes yet (a downsampling branch read by the sum
// alone), the kernel computing S stores them instead of dq.
//
// Bit for bit the same sums: S - z and B - z are the same integers, multiplied by the same s.
// Only adds whose other operand is the chain of a kernel anchor that fuses the add are
// rewritten, so every new dequantization is read by a kernel's epilogue, never computed apart.
#include <cmath>
#include <map>
#include <optional>

#include "compiler/graph/op_attrs.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::DType;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::ValueId;

/// The value of a scalar float constant.
std::optional<float> scalar(const Graph& g, ValueId v) {
  const graph::Tensor* t = g.constant(v);
  if (!t || t->dtype != DType::kFloat32 || t->size() != 1) return std::nullopt;
  return static_cast<float>(t->at(0));
}

const Node* producer(const Graph& g, ValueId v) {
  const int p = g.value(v).producer;
  return p < 0 ? nullptr : &g.nodes()[static_cast<size_t>(p)];
}

/// Whether every element of float `v` is an integer: a round, an integer cast to float, or
/// either moved by an integral scalar or clipped to integral bounds.
bool integral(const Graph& g, ValueId v, int depth = 0) {
  const Node* n = producer(g, v);
  if (!n || depth > 8) return false;
  if (n->op == OpKind::kRound) return true;
  if (n->op == OpKind::kCast) return !graph::is_float(g.type(n->inputs[0]).dtype);
  if (n->op == OpKind::kClip) {
    const auto c = graph::attrs_as<graph::ClipAttrs>(n->attrs);
    return std::floor(c.min) == c.min && std::floor(c.max) == c.max &&
           integral(g, n->inputs[0], depth + 1);
  }
  if ((n->op == OpKind::kAdd || n->op == OpKind::kSubtract) && n->inputs.size() == 2) {
    const auto c = scalar(g, n->inputs[1]);
    return c && std::floor(*c) == *c && integral(g, n->inputs[0], depth + 1);
  }
  return false;
}

/// dq = (S - z) * s (or S * s) of an integral S in [0, 255], scalar constants z and s.
struct Dequantized {
  ValueId saturated = graph::kNoValue;  ///< S
  float zero_point = 0, scale = 1;
};

std::optional<Dequantized> dequantized(const Graph& g, ValueId dq) {
  const Node* m = producer(g, dq);
  if (!m || m->op != OpKind::kMultiply || m->inputs.size() != 2) return std::nullopt;
  Dequantized d;
  const auto s = scalar(g, m->inputs[1]);
  if (!s || !std::isnormal(*s)) return std::nullopt;
  d.scale = *s;
  d.saturated = m->inputs[0];
  if (const Node* sub = producer(g, d.saturated);
      sub && sub->op == OpKind::kSubtract && sub->inputs.size() == 2) {
    const auto z = scalar(g, sub->inputs[1]);
    if (!z) return std::nullopt;
    d.zero_point = *z;
    d.saturated = sub->inputs[0];
  }
  const auto range = known_range(g, d.saturated);
  if (!range || range->first < 0 || range->second > 255 || !integral(g, d.saturated))
    return std::nullopt;
  return d;
}

/// The bytes of dq's requantization (FakeQuantizationToInteger's: multiply by 1 / s, round,
/// plus the zero point, clip to [0, 255], cast to uint8) when they equal S: the same zero point
/// and 1 / s close enough to s's inverse that (S - z) * s / s rounds back to S - z.
std::optional<ValueId> requantized_bytes(const Graph& g, const std::vector<int>& uses,
                                         const std::vector<std::vector<int>>& readers, ValueId dq,
                                         const Dequantized& d) {
  for (int r : readers[static_cast<size_t>(dq)]) {
    const Node* n = &g.nodes()[static_cast<size_t>(r)];
    if (n->op != OpKind::kMultiply || n->inputs[0] != dq) continue;
    const auto inverse = scalar(g, n->inputs[1]);
    if (!inverse || std::abs(static_cast<double>(*inverse) * d.scale - 1.0) > 1e-5) continue;
    float zero_point = 0;
    bool rounded = false;
    ValueId v = n->output;
    while (uses[static_cast<size_t>(v)] == 1 && readers[static_cast<size_t>(v)].size() == 1) {
      n = &g.nodes()[static_cast<size_t>(readers[static_cast<size_t>(v)][0])];
      if (n->op == OpKind::kRound && !rounded) {
        rounded = true;
      } else if (n->op == OpKind::kAdd && rounded && n->inputs[0] == v && scalar(g, n->inputs[1])) {
        zero_point += *scalar(g, n->inputs[1]);
      } else if (n->op == OpKind::kClip && rounded) {
        const auto c = graph::attrs_as<graph::ClipAttrs>(n->attrs);
        if (c.min > 0 || c.max < 255) break;
      } else if (n->op == OpKind::kCast && rounded && g.type(n->output).dtype == DType::kUInt8) {
        if (zero_point == d.zero_point) return n->output;
        break;
      } else {
        break;
      }
      v = n->output;
    }
  }
  return std::nullopt;
}

/// The kernel anchor whose fused chain computes `x` (each value of the chain read once, every
/// node an epilogue the anchor's kernel fuses); -1 for none.
int fusing_anchor(const Graph& g, const std::vector<int>& uses, ValueId x) {
  std::vector<int> chain;
  ValueId v = x;
  for (int depth = 0; depth < 64; ++depth) {
    if (uses[static_cast<size_t>(v)] != 1) return -1;
    const int p = g.value(v).producer;
    if (p < 0) return -1;
    const Node& n = g.nodes()[static_cast<size_t>(p)];
    if (is_kernel_anchor(g, n)) {
      ValueId running = n.output;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        const Node& e = g.nodes()[static_cast<size_t>(*it)];
        if (!fuse_epilogue_node(g, n, e, running)) return -1;
        running = e.output;
      }
      return p;
    }
    if (!is_elementwise(n.op) && n.op != OpKind::kCast) return -1;
    ValueId next = graph::kNoValue;
    for (ValueId in : n.inputs) {
      if (g.is_constant(in)) continue;
      if (next != graph::kNoValue) return -1;  // two tensors: not a chain this pass follows
      next = in;
    }
    if (next == graph::kNoValue) return -1;
    chain.push_back(p);
    v = next;
  }
  return -1;
}

/// One add rewritten: its operand `operand` read as the dequantization of `bytes` (a value of
/// the source graph) or, without them, of new bytes cast from `saturated`.
struct Rewrite {
  size_t operand = 0;
  Dequantized d;
  std::optional<ValueId> bytes;
};

Expected<Graph> run(const Graph& g) {
  const auto uses = g.use_counts();
  std::vector<std::vector<int>> readers(g.values().size());
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (ValueId in : g.nodes()[i].inputs)
      if (readers[static_cast<size_t>(in)].empty() ||
          readers[static_cast<size_t>(in)].back() != static_cast<int>(i))
        readers[static_cast<size_t>(in)].push_back(static_cast<int>(i));

  std::map<int, Rewrite> rewrites;         // by add node
  std::map<ValueId, int> rewritten_reads;  // per dq: adds rewritten to read its bytes
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.op != OpKind::kAdd || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1] ||
        !is_float_node(g, n))
      continue;
    for (size_t k = 0; k < 2; ++k) {
      const ValueId dq = n.inputs[k], x = n.inputs[1 - k];
      if (g.type(dq).shape != g.type(n.output).shape || g.is_constant(dq)) continue;
      const auto d = dequantized(g, dq);
      if (!d) continue;
      const int anchor = fusing_anchor(g, uses, x);
      if (anchor < 0) continue;
      Rewrite r{k, *d, requantized_bytes(g, uses, readers, dq, *d)};
      // The bytes exist when the anchor's kernel runs: computed by a node before it, or by
      // the fused chain of an anchor before it (a group runs where its anchor is).
      const ValueId source = r.bytes ? *r.bytes : d->saturated;
      const int computed_by = fusing_anchor(g, uses, source);
      if ((computed_by >= 0 ? computed_by : g.value(source).producer) >= anchor) continue;
      rewrites.emplace(static_cast<int>(i), r);
      ++rewritten_reads[dq];
      break;
    }
  }
  // Where the sums were dq's only float readers, dq is needed no more: its bytes are S's, cast
  // right where S is computed (S then has one reader, the cast, and the kernel computing S
  // stores bytes instead of floats), and a requantization of dq, if any, is those bytes too.
  std::map<ValueId, ValueId> new_bytes;  // S (source) -> its bytes (new graph), once emitted
  std::map<ValueId, bool> cast_saturated;
  std::map<ValueId, ValueId> bytes_of;  // requantized bytes (source) -> their S (source)
  for (auto it = rewrites.begin(); it != rewrites.end();) {
    const Node& add = g.nodes()[static_cast<size_t>(it->first)];
    const ValueId dq = add.inputs[it->second.operand];
    const int others = uses[static_cast<size_t>(dq)] - rewritten_reads[dq];
    if (!it->second.bytes && others != 0) {
      it = rewrites.erase(it);
      continue;
    }
    if (!it->second.bytes || others == 1) {
      cast_saturated[it->second.d.saturated] = true;
      if (it->second.bytes) bytes_of[*it->second.bytes] = it->second.d.saturated;
    }
    ++it;
  }
  if (rewrites.empty()) return g;

  Rewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    auto r = rewrites.find(static_cast<int>(i));
    if (r == rewrites.end()) {
      if (auto b = bytes_of.find(n.output); b != bytes_of.end()) {
        rw.set(n.output, new_bytes.at(b->second));
        continue;
      }
      TT_RETURN_IF_ERROR(rw.copy(n));
      if (cast_saturated.count(n.output)) {
        TT_ASSIGN_OR_RETURN(
            ValueId b,
            rw.emit(OpKind::kCast, n.name + ".bytes", {rw.map(n.output)},
                    graph::to_attrs(graph::CastAttrs{static_cast<int64_t>(DType::kUInt8)})));
        new_bytes[n.output] = b;
      }
      continue;
    }
    const Rewrite& w = r->second;
    const ValueId bytes = w.bytes ? rw.map(*w.bytes) : new_bytes.at(w.d.saturated);
    const std::string name = n.name + ".residual";
    TT_ASSIGN_OR_RETURN(
        ValueId f,
        rw.emit(OpKind::kCast, name + ".float32", {bytes},
                graph::to_attrs(graph::CastAttrs{static_cast<int64_t>(DType::kFloat32)})));
    if (w.d.zero_point != 0) {
      const ValueId z = rw.out().add_constant(name + ".zero_point",
                                              graph::Tensor::from_floats({}, {w.d.zero_point}));
      TT_ASSIGN_OR_RETURN(f, rw.emit(OpKind::kSubtract, name + ".shifted", {f, z}));
    }
    const ValueId s =
        rw.out().add_constant(name + ".scale", graph::Tensor::from_floats({}, {w.d.scale}));
    TT_ASSIGN_OR_RETURN(ValueId dq, rw.emit(OpKind::kMultiply, name + ".dequantized", {f, s}));
    std::vector<ValueId> inputs = {rw.map(n.inputs[0]), rw.map(n.inputs[1])};
    inputs[w.operand] = dq;
    TT_ASSIGN_OR_RETURN(ValueId y, rw.emit(n.op, n.name, std::move(inputs), n.attrs));
    rw.set(n.output, y);
  }
  return rw.finish();
}

}  // namespace

Pass residuals_as_bytes() {
  return Pass{"ResidualsAsBytes",
              3,
              "a kernel's sum of a dequantized residual reads the residual's bytes (uint8) "
              "instead of a float copy the kernel before stored (the same sums)",
              {},
              run};
}

}  // namespace tensortune::passes
