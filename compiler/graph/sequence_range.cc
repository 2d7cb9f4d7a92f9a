// Implements sequence_range.h: which axes run over the sequence, whether padding them is exact
// node by node, and the masks that make attention so.
#include "compiler/graph/sequence_range.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph {

std::vector<int64_t> sequence_buckets(int64_t lo, int64_t hi, bool half_octaves) {
  std::vector<int64_t> buckets;
  for (int64_t b = 1; b < hi; b *= 2) {
    for (int64_t length : {b, half_octaves && b >= 2 ? b + b / 2 : int64_t{0}})
      if (length >= lo && length < hi && (buckets.empty() || length > buckets.back()))
        buckets.push_back(length);
  }
  buckets.push_back(hi);
  return buckets;
}

Expected<std::vector<int64_t>> buckets_of(const SequenceRange& range) {
  if (range.buckets.empty()) return sequence_buckets(range.lo, range.hi, true);
  for (size_t i = 0; i < range.buckets.size(); ++i) {
    const int64_t b = range.buckets[i];
    if (b < range.lo || b > range.hi || (i > 0 && b <= range.buckets[i - 1]))
      return invalid_argument("bucket " + std::to_string(b) +
                              ": the buckets must be ascending "
                              "lengths inside the range " +
                              std::to_string(range.lo) + ".." + std::to_string(range.hi));
  }
  if (range.buckets.back() != range.hi)
    return invalid_argument("the last bucket " + std::to_string(range.buckets.back()) +
                            " is not the range's top " + std::to_string(range.hi) +
                            ": longer lengths would have none");
  return range.buckets;
}

size_t bucket_index_for_length(const std::vector<int64_t>& buckets, int64_t length) {
  const auto it = std::lower_bound(buckets.begin(), buckets.end(), length);
  const size_t index = static_cast<size_t>(it - buckets.begin());
  return buckets.empty() ? 0 : std::min(index, buckets.size() - 1);
}

int64_t bucket_for_length(const std::vector<int64_t>& buckets, int64_t length) {
  return buckets.empty() ? length : buckets[bucket_index_for_length(buckets, length)];
}

Tensor sequence_mask(int64_t bucket, int64_t length) {
  Tensor mask = Tensor::zeros(DType::kFloat32, {bucket});
  for (int64_t i = length; i < bucket; ++i) mask.f32[i] = -std::numeric_limits<float>::infinity();
  return mask;
}

Tensor resize_box(const Tensor& t, const Shape& shape) {
  Tensor out = Tensor::zeros(t.dtype, shape);
  const int rank = static_cast<int>(shape.size());
  if (out.size() == 0 || t.size() == 0) return out;
  const auto in_strides = strides_of(t.shape), out_strides = strides_of(shape);
  // Rows of the last axis at a time: the common prefix of each row is copied.
  const int64_t row = rank == 0 ? 1 : std::min(t.shape.back(), shape.back());
  std::vector<int64_t> c(rank, 0);  // coordinates over all axes but the last
  while (true) {
    bool inside = true;
    int64_t src = 0, dst = 0;
    for (int d = 0; d + 1 < rank; ++d) {
      inside &= c[d] < t.shape[d];
      src += c[d] * in_strides[d];
      dst += c[d] * out_strides[d];
    }
    if (inside) {
      if (is_float(t.dtype))
        std::copy_n(t.f32.begin() + src, row, out.f32.begin() + dst);
      else
        std::copy_n(t.i64.begin() + src, row, out.i64.begin() + dst);
    }
    int d = rank - 2;
    for (; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
    if (d < 0) break;
  }
  return out;
}

namespace {

/// Per axis of a value: a fixed extent, a sequence axis, or a sequence axis whose padded
/// positions hold exactly 0 (a masked softmax's output along its keys).
enum class Axis : uint8_t { kFixed, kSequence, kSequenceZero };

bool is_sequence(Axis a) { return a != Axis::kFixed; }

std::string describe(const Graph& g, int node) {
  const Node& n = g.nodes()[static_cast<size_t>(node)];
  return "node '" + n.name + "' (" + op_name(n.op) + ")";
}

Error refuse(const Graph& g, int node, const std::string& why) {
  return invalid_argument(describe(g, node) + " " + why +
                          ": padding a sequence there would change what its real positions "
                          "compute, so this model cannot take a range of lengths");
}

/// The two graphs must be one structure: the same nodes, operators and inputs.
Status check_same_structure(const Graph& a, int64_t la, const Graph& b, int64_t lb) {
  const std::string lengths = std::to_string(la) + " and " + std::to_string(lb);
  if (a.nodes().size() != b.nodes().size() || a.values().size() != b.values().size() ||
      a.outputs() != b.outputs() || a.inputs() != b.inputs())
    return invalid_argument("the model's graph differs between sequence lengths " + lengths + " (" +
                            std::to_string(a.nodes().size()) + " against " +
                            std::to_string(b.nodes().size()) +
                            " nodes after import): it cannot take a range of lengths");
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node &x = a.nodes()[i], &y = b.nodes()[i];
    if (x.op != y.op || x.name != y.name || x.inputs != y.inputs)
      return invalid_argument("the model's graph differs between sequence lengths " + lengths +
                              " at node '" + x.name + "' (" + op_name(x.op) + " against '" +
                              y.name + "', " + op_name(y.op) + ")");
  }
  return ok_status();
}

/// Whether constant `a` (at the shorter length) is `b`'s restriction to a's positions.
bool agrees_on_prefix(const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype || a.shape.size() != b.shape.size()) return false;
  const auto sb = strides_of(b.shape), sa = strides_of(a.shape);
  for (int64_t i = 0; i < a.size(); ++i) {
    int64_t j = 0, rest = i;
    for (size_t d = 0; d < a.shape.size(); ++d) {
      j += (rest / sa[d]) * sb[d];
      rest %= sa[d];
    }
    const double x = a.at(i), y = b.at(j);
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
  }
  return true;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

class Planner {
 public:
  Planner(const SequenceRange& range, const Graph& a, int64_t la, const Graph& b, int64_t lb)
      : range_(range), a_(a), b_(b), la_(la), lb_(lb), axes_(a.values().size()) {}

  Expected<SequencePlan> run() {
    TT_RETURN_IF_ERROR(check_same_structure(a_, la_, b_, lb_));
    const std::vector<int> uses = a_.use_counts();
    for (ValueId v = 0; v < static_cast<ValueId>(a_.values().size()); ++v)
      if (uses[static_cast<size_t>(v)] > 0 || a_.value(v).producer < 0)
        TT_RETURN_IF_ERROR(classify(v, uses[static_cast<size_t>(v)] > 0));
    for (const SequenceInput& in : range_.inputs) {
      const ValueId id = a_.find_input(in.name);
      if (id == kNoValue) return invalid_argument("no model input is named '" + in.name + "'");
      if (in.axis < 0 || in.axis >= static_cast<int>(axes_[id].size()) ||
          !is_sequence(axes_[id][in.axis]))
        return invalid_argument("input '" + in.name + "' has no axis " + std::to_string(in.axis) +
                                " that follows the sequence length");
    }
    for (size_t n = 0; n < a_.nodes().size(); ++n) TT_RETURN_IF_ERROR(visit(static_cast<int>(n)));
    for (ValueId out : a_.outputs()) {
      std::vector<int> seq;
      for (size_t d = 0; d < axes_[out].size(); ++d)
        if (is_sequence(axes_[out][d])) seq.push_back(static_cast<int>(d));
      plan_.output_axes.push_back(std::move(seq));
    }
    plan_.range = range_;
    return plan_;
  }

 private:
  /// Sequence axes from the two shapes; constants must agree on the shorter length's positions.
  Status classify(ValueId v, bool used) {
    const Shape &sa = a_.type(v).shape, &sb = b_.type(v).shape;
    const std::string what = a_.value(v).producer >= 0 ? describe(a_, a_.value(v).producer)
                                                       : "'" + a_.value(v).name + "'";
    if (sa.size() != sb.size())
      return invalid_argument(what + ": its rank changes with the sequence length");
    auto& axes = axes_[v];
    axes.assign(sa.size(), Axis::kFixed);
    for (size_t d = 0; d < sa.size(); ++d) {
      if (sa[d] == la_ && sb[d] == lb_) {
        axes[d] = Axis::kSequence;
      } else if (sa[d] != sb[d]) {
        return invalid_argument(what + ": its axis " + std::to_string(d) + " is " +
                                std::to_string(sa[d]) + " at length " + std::to_string(la_) +
                                " and " + std::to_string(sb[d]) + " at " + std::to_string(lb_) +
                                ", the sequence merged with another axis or grown; a range of "
                                "lengths needs the sequence as an axis of its own");
      }
    }
    if (a_.is_constant(v) != b_.is_constant(v))
      return invalid_argument(what + " is a constant at one sequence length and not at the other");
    // What the importer folded and nothing reads (the length's own Shape) does not matter.
    if (used && a_.is_constant(v) && !agrees_on_prefix(*a_.constant(v), *b_.constant(v)))
      return invalid_argument("constant '" + a_.value(v).name +
                              "' depends on the sequence length beyond its extent (its values "
                              "at length " +
                              std::to_string(la_) + " are not those at " + std::to_string(lb_) +
                              " on the shorter one's positions)");
    return ok_status();
  }

  bool has_sequence(ValueId v) const {
    return std::any_of(axes_[v].begin(), axes_[v].end(), is_sequence);
  }

  /// The axes of input `v` aligned (numpy broadcasting) with output axis `d` of rank `rank`.
  Axis aligned(ValueId v, size_t d, size_t rank) const {
    const size_t r = axes_[v].size();
    if (d + r < rank) return Axis::kFixed;
    return axes_[v][d + r - rank];
  }

  Status visit(int index) {
    const Node& n = a_.nodes()[static_cast<size_t>(index)];
    auto& out = axes_[n.output];
    const size_t rank = out.size();
    bool any_input = false;
    for (ValueId in : n.inputs) any_input |= has_sequence(in);
    if (!any_input) return ok_status();  // computed once for all positions (a constant subgraph)
    switch (n.op) {
      case OpKind::kIdentity:
      case OpKind::kCast:
      case OpKind::kRelu:
      case OpKind::kNeg:
        // f(0) = 0: padded zeros stay zeros.
        for (size_t d = 0; d < rank; ++d)
          if (axes_[n.inputs[0]][d] == Axis::kSequenceZero) out[d] = Axis::kSequenceZero;
        return ok_status();
      case OpKind::kMultiply:
      case OpKind::kDivide:
        for (size_t d = 0; d < rank; ++d) {
          // A zero numerator (or either factor) keeps the product zero where it spans the axis.
          const size_t last = n.op == OpKind::kDivide ? 1 : n.inputs.size();
          for (size_t i = 0; i < last; ++i)
            if (aligned(n.inputs[i], d, rank) == Axis::kSequenceZero) out[d] = Axis::kSequenceZero;
        }
        return ok_status();
      case OpKind::kSoftmax: {
        const int axis = static_cast<int>(
            normalize_axis(attrs_as<SoftmaxAttrs>(n.attrs).axis, static_cast<int64_t>(rank)));
        if (is_sequence(axes_[n.inputs[0]][axis])) {
          plan_.masks.push_back({n.name, axis});
          out[axis] = Axis::kSequenceZero;
        }
        return ok_status();
      }
      case OpKind::kLogSoftmax: {
        const int axis = static_cast<int>(
            normalize_axis(attrs_as<SoftmaxAttrs>(n.attrs).axis, static_cast<int64_t>(rank)));
        if (is_sequence(axes_[n.inputs[0]][axis]))
          return refuse(a_, index, "normalises over the sequence");
        return ok_status();
      }
      case OpKind::kLayerNorm: {
        const auto& in = axes_[n.inputs[0]];
        const int64_t axis =
            normalize_axis(attrs_as<LayerNormAttrs>(n.attrs).axis, static_cast<int64_t>(in.size()));
        for (size_t d = static_cast<size_t>(std::max<int64_t>(axis, 0)); d < in.size(); ++d)
          if (is_sequence(in[d])) return refuse(a_, index, "normalises over the sequence");
        return ok_status();
      }
      case OpKind::kReduceMean:
      case OpKind::kReduceSum:
      case OpKind::kReduceMax:
      case OpKind::kReduceMin:
      case OpKind::kReduceProd:
      case OpKind::kReduceL2:
      case OpKind::kReduceL1:
      case OpKind::kReduceSumSquare:
      case OpKind::kReduceLogSum:
      case OpKind::kReduceLogSumExp:
        return reduction(index, attrs_as<ReduceAttrs>(n.attrs).axes);
      case OpKind::kArgMax:
      case OpKind::kArgMin:
        return reduction(index, {attrs_as<ArgReduceAttrs>(n.attrs).axis});
      case OpKind::kMatMul:
      case OpKind::kMatMulInteger:
      case OpKind::kDense:
        return contraction(index);
      case OpKind::kReshape:
      case OpKind::kFlatten:
      case OpKind::kSqueeze:
      case OpKind::kUnsqueeze:
        return reshape(index);
      case OpKind::kTranspose: {
        const auto perm = attrs_as<TransposeAttrs>(n.attrs).perm;
        for (size_t d = 0; d < rank && d < perm.size(); ++d)
          out[d] = axes_[n.inputs[0]][static_cast<size_t>(perm[d])];
        return ok_status();
      }
      case OpKind::kConcat: {
        const int64_t axis =
            normalize_axis(attrs_as<ConcatAttrs>(n.attrs).axis, static_cast<int64_t>(rank));
        for (ValueId in : n.inputs)
          if (is_sequence(axes_[in][static_cast<size_t>(axis)]))
            return refuse(a_, index, "joins tensors along the sequence");
        return ok_status();
      }
      case OpKind::kSlice:
        return slice(index);
      case OpKind::kGather:
        return gather(index);
      default:
        break;
    }
    const OpKind op = n.op;
    const bool elementwise =
        is_unary_elementwise(op) || is_binary_elementwise(op) || op == OpKind::kWhere ||
        op == OpKind::kExpand || op == OpKind::kBiasAdd || op == OpKind::kBatchNorm ||
        op == OpKind::kPow || op == OpKind::kMod || op == OpKind::kMaximum ||
        op == OpKind::kMinimum || op == OpKind::kPRelu || op == OpKind::kNot ||
        op == OpKind::kEqual || op == OpKind::kLess || op == OpKind::kLessOrEqual ||
        op == OpKind::kGreater || op == OpKind::kGreaterOrEqual || op == OpKind::kAnd ||
        op == OpKind::kOr || op == OpKind::kXor;
    // Element-wise work (numpy broadcasting, or along a channel axis) reads each position alone.
    if (elementwise) return ok_status();
    return refuse(a_, index, "reads its input across positions in a way not known to be exact");
  }

  Status reduction(int index, std::vector<int64_t> axes) {
    const Node& n = a_.nodes()[static_cast<size_t>(index)];
    const auto& in = axes_[n.inputs[0]];
    if (axes.empty())
      for (size_t d = 0; d < in.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    const bool sums = n.op == OpKind::kReduceSum || n.op == OpKind::kReduceSumSquare ||
                      n.op == OpKind::kReduceL1 || n.op == OpKind::kReduceL2;
    for (int64_t axis : axes) {
      const int64_t d = normalize_axis(axis, static_cast<int64_t>(in.size()));
      if (d < 0 || !is_sequence(in[static_cast<size_t>(d)])) continue;
      // Padded zeros add nothing to a sum; any other reduction sees them.
      if (!(sums && in[static_cast<size_t>(d)] == Axis::kSequenceZero))
        return refuse(a_, index, "reduces over the sequence");
    }
    return ok_status();
  }

  /// A product over K: padded positions of K contribute nothing only where one side is zero
  /// there (the masked softmax's probabilities times V).
  Status contraction(int index) {
    const Node& n = a_.nodes()[static_cast<size_t>(index)];
    const auto &x = axes_[n.inputs[0]], &w = axes_[n.inputs[1]];
    const Axis xk = x.back();
    const Axis wk = n.op == OpKind::kDense ? w.back() : (w.size() == 1 ? w[0] : w[w.size() - 2]);
    if (!is_sequence(xk) && !is_sequence(wk)) return ok_status();
    if (n.op != OpKind::kMatMulInteger && (xk == Axis::kSequenceZero || wk == Axis::kSequenceZero))
      return ok_status();
    return refuse(a_, index, "sums over the sequence (its inner axis) with no masked factor");
  }

  /// A reshape keeps each sequence axis whole: as many before as after, each with as many
  /// elements before and after it, at both lengths.
  Status reshape(int index) {
    const Node& n = a_.nodes()[static_cast<size_t>(index)];
    const ValueId in = n.inputs[0];
    std::vector<size_t> from, to;
    for (size_t d = 0; d < axes_[in].size(); ++d)
      if (is_sequence(axes_[in][d])) from.push_back(d);
    for (size_t d = 0; d < axes_[n.output].size(); ++d)
      if (is_sequence(axes_[n.output][d])) to.push_back(d);
    if (from.size() != to.size()) return refuse(a_, index, "merges or splits the sequence axis");
    for (size_t k = 0; k < from.size(); ++k) {
      for (const Graph* g : {&a_, &b_}) {
        const Shape &si = g->type(in).shape, &so = g->type(n.output).shape;
        if (product(si, 0, from[k]) != product(so, 0, to[k]) ||
            product(si, from[k] + 1, si.size()) != product(so, to[k] + 1, so.size()))
          return refuse(a_, index, "moves the sequence's positions");
      }
      axes_[n.output][to[k]] = axes_[in][from[k]];
    }
    return ok_status();
  }

  /// Slicing a sequence axis is exact when it keeps the whole axis, or reads only positions
  /// below the range's shortest length (BERT's first token), the same ones at both lengths.
  Status slice(int index) {
    const Node& n = a_.nodes()[static_cast<size_t>(index)];
    const ValueId in = n.inputs[0];
    const auto& attrs_a = attrs_as<SliceAttrs>(n.attrs);
    const auto& attrs_b = attrs_as<SliceAttrs>(b_.nodes()[static_cast<size_t>(index)].attrs);
    const size_t rank = axes_[in].size();
    for (size_t i = 0; i < attrs_a.starts.size(); ++i) {
      const int64_t axis =
          normalize_axis(attrs_a.axes.empty() ? static_cast<int64_t>(i) : attrs_a.axes[i],
                         static_cast<int64_t>(rank));
      if (axis < 0 || !is_sequence(axes_[in][static_cast<size_t>(axis)])) continue;
      const auto range = [&](const SliceAttrs& s, int64_t length) {
        return normalize_slice(length, s.starts.at(i), s.ends.at(i),
                               s.steps.empty() ? 1 : s.steps.at(i));
      };
      const SliceRange ra = range(attrs_a, la_), rb = range(attrs_b, lb_);
      const bool whole = ra.start == 0 && ra.step == 1 && ra.count == la_ && rb.start == 0 &&
                         rb.step == 1 && rb.count == lb_;
      const int64_t last = ra.start + ra.step * (ra.count - 1);
      const bool head = ra.start == rb.start && ra.step == rb.step && ra.count == rb.count &&
                        ra.start >= 0 && ra.start < range_.lo && last >= 0 && last < range_.lo;
      if (!whole && !head)
        return refuse(a_, index,
                      "reads positions of the sequence that a shorter one does not have "
                      "(its end, or past the range's shortest length " +
                          std::to_string(range_.lo) + ")");
    }
    return ok_status();
  }

  /// Looking up rows by the sequence's token ids is row-wise; gathering along the sequence is
  /// exact only at constant positions below the shortest length.
  Status gather(int index) {
    const Node& n = a_.nodes()[static_cast<size_t>(index)];
    const ValueId data = n.inputs[0], indices = n.inputs[1];
    const int64_t axis = normalize_axis(attrs_as<GatherAttrs>(n.attrs).axis,
                                        static_cast<int64_t>(axes_[data].size()));
    if (axis < 0 || !is_sequence(axes_[data][static_cast<size_t>(axis)])) return ok_status();
    const Tensor* at = a_.constant(indices);
    if (at && !has_sequence(indices)) {
      bool below = true;
      for (int64_t i = 0; i < at->size(); ++i)
        below &= at->at(i) >= 0 && at->at(i) < static_cast<double>(range_.lo);
      if (below) return ok_status();
    }
    return refuse(a_, index, "gathers along the sequence at positions a shorter one may lack");
  }

  const SequenceRange& range_;
  const Graph &a_, &b_;
  int64_t la_, lb_;
  std::vector<std::vector<Axis>> axes_;
  SequencePlan plan_;
};

}  // namespace

Expected<SequencePlan> plan_sequence_range(
    const SequenceRange& range, const std::function<Expected<Graph>(int64_t)>& graph_at) {
  if (range.lo < 1 || range.hi <= range.lo)
    return invalid_argument("a sequence range " + std::to_string(range.lo) + ".." +
                            std::to_string(range.hi) +
                            " needs 1 <= lo < hi (a single length is a plain shape)");
  if (range.inputs.empty()) return invalid_argument("a sequence range names no input axis");
  // The two longest lengths: both inside the range, neither a 1 that broadcasting would blur.
  const int64_t la = range.hi - 1, lb = range.hi;
  TT_ASSIGN_OR_RETURN(Graph a, graph_at(la));
  TT_ASSIGN_OR_RETURN(Graph b, graph_at(lb));
  return Planner(range, a, la, b, lb).run();
}

Expected<Graph> mask_sequence_padding(const Graph& g, const SequencePlan& plan, int64_t bucket) {
  Graph out(g.name());
  std::vector<ValueId> map(g.values().size(), kNoValue);
  for (ValueId in : g.inputs()) map[in] = out.add_input(g.value(in).name, g.type(in));
  const ValueId mask = out.add_input(kSequenceMaskInput, {DType::kFloat32, {bucket}});
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (g.is_constant(v)) map[v] = out.add_constant(g.value(v).name, g.value(v).constant);
  for (const Node& n : g.nodes()) {
    std::vector<ValueId> inputs;
    for (ValueId in : n.inputs) inputs.push_back(map[in]);
    for (const auto& m : plan.masks) {
      if (m.node != n.name) continue;
      Shape shape(out.type(inputs[0]).shape.size(), 1);
      if (m.axis < 0 || static_cast<size_t>(m.axis) >= shape.size() ||
          out.type(inputs[0]).shape[m.axis] != bucket)
        return invalid_argument("softmax '" + n.name + "' has no axis " + std::to_string(m.axis) +
                                " of the bucket's length " + std::to_string(bucket));
      shape[m.axis] = bucket;
      TT_ASSIGN_OR_RETURN(ValueId spread,
                          out.add_node(OpKind::kReshape, n.name + ".sequence_mask", {mask},
                                       {{"shape", Ints(shape.begin(), shape.end())}}));
      TT_ASSIGN_OR_RETURN(inputs[0],
                          out.add_node(OpKind::kAdd, n.name + ".masked", {inputs[0], spread}));
    }
    TT_ASSIGN_OR_RETURN(map[n.output], out.add_node(n.op, n.name, inputs, n.attrs));
  }
  for (size_t i = 0; i < g.outputs().size(); ++i)
    out.add_output(map[g.outputs()[i]], g.output_name(i));
  return out;
}

}  // namespace tensortune::graph
