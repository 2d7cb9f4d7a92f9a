#include "compiler/graph/memory_plan.h"

#include <algorithm>
#include <map>

#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph {

namespace {

int64_t element_bytes(DType d) { return buffer_element_size(d); }

int64_t value_bytes(const Graph& g, ValueId v) {
  const TensorType& t = g.type(v);
  return num_elements(t.shape) * element_bytes(t.dtype);
}

}  // namespace

bool is_view_op(OpKind op) {
  return op == OpKind::kReshape || op == OpKind::kFlatten || op == OpKind::kSqueeze ||
         op == OpKind::kUnsqueeze;
}

bool is_prefix_slice(const Graph& g, const Node& n) {
  if (n.op != OpKind::kSlice || n.inputs.empty()) return false;
  const Shape& in = g.type(n.inputs[0]).shape;
  const Shape& out = g.type(n.output).shape;
  if (in.size() != out.size()) return false;
  const auto a = attrs_as<SliceAttrs>(n.attrs);
  for (int64_t axis : a.axes)
    if (axis < 0 || axis >= static_cast<int64_t>(in.size())) return false;
  // The output reads input[base + sum c[d] * strides[d]]: a prefix where that is the output's
  // own contiguous order from 0 (axes of one entry aside, which any stride reads alike).
  const StridedView v = slice_view(in, a.axes, a.starts, a.ends, a.steps);
  if (v.base != 0) return false;
  int64_t stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    if (out[d] != 1 && v.strides[d] != stride) return false;
    stride *= out[d];
  }
  return true;
}

bool is_appending_zero_pad(const Graph& g, const Node& n) {
  if (n.op != OpKind::kPad || n.inputs.empty() || g.type(n.output).dtype != DType::kFloat32)
    return false;
  const auto a = attrs_as<PadAttrs>(n.attrs);
  const Shape& in = g.type(n.inputs[0]).shape;
  const size_t rank = in.size();
  if (a.mode != 0 || a.value != 0.0 || a.pads.size() != 2 * rank) return false;
  bool padded = false;  // an earlier axis was padded: every later one must be whole
  for (size_t d = 0; d < rank; ++d) {
    const int64_t before = a.pads[d], after = a.pads[rank + d];
    if (before != 0 || after < 0 || (padded && after != 0)) return false;
    if (after > 0) padded = true;
    if (!padded && in[d] != 1) padded = true;  // past the leading single entries
  }
  return true;
}

MemoryPlan plan_memory(const Graph& g, int64_t alignment, bool views) {
  const auto& nodes = g.nodes();
  // Step of each node: its fusion group's order of first appearance, or its own index.
  std::vector<int> step(nodes.size());
  std::map<int, int> group_step;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int group = nodes[i].fusion_group;
    if (group < 0) {
      step[i] = static_cast<int>(group_step.size() + i) + 1000000;  // unique, ordered
      continue;
    }
    auto it = group_step.emplace(group, static_cast<int>(group_step.size())).first;
    step[i] = it->second;
  }
  // Re-number steps densely in execution order.
  std::vector<int> order(step);
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  for (int& s : step)
    s = static_cast<int>(std::lower_bound(order.begin(), order.end(), s) - order.begin());

  std::vector<bool> is_output(g.values().size(), false);
  for (ValueId o : g.outputs()) is_output[o] = true;
  std::vector<int> last_read(g.values().size(), -1);
  std::vector<bool> read_outside(g.values().size(), false);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId in : nodes[i].inputs) {
      last_read[in] = std::max(last_read[in], step[i]);
      const int producer = g.value(in).producer;
      if (producer >= 0 && step[producer] != step[i]) read_outside[in] = true;
    }

  // Views, in node order so that a view of a view finds its root already known.
  MemoryPlan plan;
  std::vector<ValueId> root(g.values().size(), kNoValue);
  std::vector<int64_t> capacity(g.values().size(), 0);       // bytes the root's pad views need
  std::vector<ValueId> parent(g.values().size(), kNoValue);  // a view's input
  const std::vector<int> uses = g.use_counts();
  auto planned = [&](ValueId v) {
    const int producer = g.value(v).producer;
    return producer >= 0 && !is_output[v] && read_outside[v];
  };
  if (views) {
    std::map<int, int> group_size;
    for (const Node& n : nodes)
      if (n.fusion_group >= 0) ++group_size[n.fusion_group];
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      const bool alone = n.fusion_group < 0 || group_size[n.fusion_group] == 1;
      if (!alone || n.inputs.empty()) continue;
      const bool pad = is_appending_zero_pad(g, n);
      if (!is_view_op(n.op) && !is_prefix_slice(g, n) && !pad) continue;
      const ValueId in = n.inputs[0];
      if (!planned(in) || !planned(n.output)) continue;
      const ValueId r = root[in] != kNoValue ? root[in] : in;
      BufferView view{n.output, r};
      if (pad) {
        // Its zeros go past the input's bytes: only where those are the whole root's, or where
        // nothing else reads the root's bytes past them (every value from the root down to the
        // input has one reader, the next view), or they would change what another reader sees.
        bool tail_unread = true;
        if (value_bytes(g, in) != value_bytes(g, r))
          for (ValueId v = in; v != r && tail_unread;) {
            v = parent[v];
            tail_unread = uses[v] == 1;
          }
        if (!tail_unread) continue;
        view.zeroed_from = value_bytes(g, in);
        view.zeroed_to = value_bytes(g, n.output);
        capacity[r] = std::max(capacity[r], view.zeroed_to);
      }
      root[n.output] = r;
      parent[n.output] = in;
      last_read[r] = std::max(last_read[r], last_read[n.output]);
      plan.views.push_back(view);
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ValueId v = nodes[i].output;
    if (!planned(v) || root[v] != kNoValue) continue;  // caller-owned, internal, or a view
    PlannedBuffer b;
    b.value = v;
    const int64_t bytes = std::max(value_bytes(g, v), capacity[v]);
    b.bytes = (bytes + alignment - 1) / alignment * alignment;
    b.first_step = step[i];
    b.last_step = std::max(last_read[v], step[i]);
    plan.unshared_bytes += b.bytes;
    plan.buffers.push_back(b);
  }

  const int steps = order.empty() ? 0 : static_cast<int>(order.size());
  for (int s = 0; s < steps; ++s) {
    int64_t live = 0;
    for (const auto& b : plan.buffers)
      if (b.first_step <= s && s <= b.last_step) live += b.bytes;
    plan.peak_live_bytes = std::max(plan.peak_live_bytes, live);
  }

  std::vector<size_t> by_size(plan.buffers.size());
  for (size_t i = 0; i < by_size.size(); ++i) by_size[i] = i;
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    return plan.buffers[a].bytes > plan.buffers[b].bytes;
  });
  std::vector<size_t> placed;
  for (size_t idx : by_size) {
    PlannedBuffer& b = plan.buffers[idx];
    // Placed buffers alive at the same time, by offset: take the first gap that fits.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t p : placed) {
      const PlannedBuffer& o = plan.buffers[p];
      if (o.first_step <= b.last_step && b.first_step <= o.last_step)
        busy.emplace_back(o.offset, o.offset + o.bytes);
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + b.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    b.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + b.bytes);
    placed.push_back(idx);
  }
  return plan;
}

}  // namespace tensortune::graph
