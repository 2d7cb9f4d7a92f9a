#include "schedule_space/knob.h"

#include <algorithm>
#include <set>

namespace tensortune::schedule_space {

const char* knob_kind_tag(KnobKind kind) {
  switch (kind) {
    case KnobKind::kSplit:
      return "sp";
    case KnobKind::kOther:
      return "ot";
    case KnobKind::kAnnotate:
      return "an";
  }
  return "?";
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

namespace {

// AutoTVM's DFS: `stack` holds the inner factors innermost-last (stack[0] is the entity's last
// position), the deepest position varies fastest, and the entity is [-1] + reversed(stack). So
// entity position 1 (the innermost factor) varies fastest and the index of every multi-way
// split matches AutoTVM's.
void enumerate(const std::vector<int64_t>& factors, int64_t n, bool allow_tail, int depth,
               int positions, int64_t product, std::vector<int64_t>& stack,
               std::vector<KnobValue>& out) {
  if (depth == positions) {
    if (n % product == 0 || (allow_tail && product <= n)) {
      std::vector<int64_t> entity{-1};
      entity.insert(entity.end(), stack.rbegin(), stack.rend());
      out.push_back(std::move(entity));
    }
    return;
  }
  for (int64_t f : factors) {
    if (product * f > n) break;  // factors ascend: the rest only grow the product
    stack.push_back(f);
    enumerate(factors, n, allow_tail, depth + 1, positions, product * f, stack, out);
    stack.pop_back();
  }
}

}  // namespace

Knob make_split_knob(std::string name, int64_t n, int num_outputs, SplitPolicy policy,
                     int64_t max_factor) {
  std::set<int64_t> candidates;
  for (int64_t d : divisors(n)) candidates.insert(d);
  if (policy == SplitPolicy::kVerbose)
    for (int64_t p = 1; p <= n; p *= 2) candidates.insert(p);
  std::vector<int64_t> factors;
  for (int64_t f : candidates)
    if (f <= max_factor) factors.push_back(f);
  Knob knob{std::move(name), KnobKind::kSplit, {}, n, policy == SplitPolicy::kVerbose};
  std::vector<int64_t> stack;
  enumerate(factors, n, policy == SplitPolicy::kVerbose, 0, num_outputs - 1, 1, stack,
            knob.options);
  return knob;
}

Expected<std::vector<int64_t>> canonical_split(const Knob& knob,
                                               const std::vector<int64_t>& sizes) {
  if (sizes.empty() || sizes[0] == -1 || knob.kind != KnobKind::kSplit) return sizes;
  const std::string value = knob_value_to_string(sizes);
  const int64_t n = knob.axis_length;
  int64_t inner = 1;  // 0 marks a factor below 1; stops growing past n (no overflow)
  for (size_t i = 1; i < sizes.size() && inner >= 1 && inner <= n; ++i)
    inner = sizes[i] < 1 ? 0 : inner * std::min(sizes[i], n + 1);
  const int64_t outer = inner > 0 && inner <= n ? (n + inner - 1) / inner : 0;
  const bool exact = outer * inner == n;
  if (sizes[0] < 1 || inner < 1 || inner > n || sizes[0] != outer || (!exact && !knob.allows_tail))
    return invalid_argument("knob " + knob.name + " split " + value +
                            " does not split its axis of length " + std::to_string(n) +
                            (inner >= 1 && inner <= n && (exact || knob.allows_tail)
                                 ? " (the outermost factor would be " + std::to_string(outer) + ")"
                                 : ""));
  std::vector<int64_t> out = sizes;
  out[0] = -1;
  return out;
}

Knob make_other_knob(std::string name, std::vector<KnobValue> options) {
  return Knob{std::move(name), KnobKind::kOther, std::move(options)};
}

std::string knob_value_to_string(const KnobValue& v) {
  if (auto* sizes = std::get_if<std::vector<int64_t>>(&v)) {
    std::string s = "[";
    for (size_t i = 0; i < sizes->size(); ++i) {
      if (i) s += ", ";
      s += std::to_string((*sizes)[i]);
    }
    return s + "]";
  }
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return "\"" + std::get<std::string>(v) + "\"";
}

}  // namespace tensortune::schedule_space
