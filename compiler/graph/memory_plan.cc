#include "compiler/graph/memory_plan.h"

#include <algorithm>
#include <map>

namespace tensortune::graph {

namespace {

int64_t element_bytes(DType d) { return buffer_element_size(d); }

}  // namespace

bool is_view_op(OpKind op) {
  return op == OpKind::kReshape || op == OpKind::kFlatten || op == OpKind::kSqueeze ||
         op == OpKind::kUnsqueeze;
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
      if (!is_view_op(n.op) || !alone || n.inputs.empty()) continue;
      const ValueId in = n.inputs[0];
      if (!planned(in) || !planned(n.output)) continue;
      const ValueId r = root[in] != kNoValue ? root[in] : in;
      root[n.output] = r;
      last_read[r] = std::max(last_read[r], last_read[n.output]);
      plan.views.push_back({n.output, r});
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ValueId v = nodes[i].output;
    if (!planned(v) || root[v] != kNoValue) continue;  // caller-owned, internal, or a view
    const TensorType& t = g.type(v);
    PlannedBuffer b;
    b.value = v;
    b.bytes =
        (num_elements(t.shape) * element_bytes(t.dtype) + alignment - 1) / alignment * alignment;
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
