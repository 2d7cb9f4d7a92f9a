#include "schedule_space/config_transfer.h"

#include <algorithm>
#include <set>

namespace tensortune::schedule_space {
namespace {

const std::vector<int64_t>& sizes_of(const KnobValue& v) {
  return std::get<std::vector<int64_t>>(v);
}

// Candidate `a` is no larger than `b` in every inner factor.
bool fits_under(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 1; i < a.size(); ++i)
    if (a[i] > b[i]) return false;
  return true;
}

int64_t inner_product(const std::vector<int64_t>& sizes) {
  int64_t p = 1;
  for (size_t i = 1; i < sizes.size(); ++i) p *= sizes[i];
  return p;
}

// The candidate of split knob `k` nearest below `wanted`: fits under it factor by factor, and
// of those the largest inner product (ties: the later, lexicographically larger one).
int nearest_split(const Knob& k, const std::vector<int64_t>& wanted) {
  int best = 0;
  int64_t best_product = -1;
  for (size_t i = 0; i < k.options.size(); ++i) {
    const auto& c = sizes_of(k.options[i]);
    if (!fits_under(c, wanted)) continue;
    if (inner_product(c) >= best_product) {
      best = static_cast<int>(i);
      best_product = inner_product(c);
    }
  }
  return best;
}

}  // namespace

double transfer_affinity(const ConfigSpace& target, const ConfigSpace& reference) {
  if (target.template_name() != reference.template_name()) return 0;
  double score = 0;
  bool same_knobs = target.knobs().size() == reference.knobs().size();
  for (const Knob& k : target.knobs()) {
    const int pos = reference.knob_position(k.name);
    if (pos < 0) {
      same_knobs = false;
      continue;
    }
    const Knob& r = reference.knobs()[pos];
    if (k.kind != KnobKind::kSplit || r.kind != KnobKind::kSplit || k.axis_length < 1) continue;
    const std::vector<int64_t> ours = divisors(k.axis_length);
    const std::vector<int64_t> theirs = divisors(r.axis_length);
    std::vector<int64_t> shared;
    std::set_intersection(ours.begin(), ours.end(), theirs.begin(), theirs.end(),
                          std::back_inserter(shared));
    score += static_cast<double>(shared.size()) / static_cast<double>(ours.size());
  }
  return score + (same_knobs ? 1.0 : 0.0);
}

Expected<Config> transfer_config(const ConfigSpace& target, const ConfigSpace& reference,
                                 const Config& reference_config) {
  std::vector<int32_t> digits(target.knobs().size(), 0);
  for (size_t j = 0; j < target.knobs().size(); ++j) {
    const Knob& k = target.knobs()[j];
    const int pos = reference.knob_position(k.name);
    if (pos < 0) continue;
    const KnobValue& theirs = reference.knobs()[pos].options[reference_config.digits[pos]];
    if (k.kind == KnobKind::kSplit && std::holds_alternative<std::vector<int64_t>>(theirs)) {
      digits[j] = nearest_split(k, sizes_of(theirs));
      continue;
    }
    auto found = std::find(k.options.begin(), k.options.end(), theirs);
    if (found != k.options.end()) {
      digits[j] = static_cast<int32_t>(found - k.options.begin());
    } else if (const auto* v = std::get_if<int64_t>(&theirs)) {
      // An integer knob whose value we lack (tile_oh 4 where our axis allows 2): the largest below.
      for (size_t i = 0; i < k.options.size(); ++i)
        if (const auto* c = std::get_if<int64_t>(&k.options[i]); c && *c <= *v)
          digits[j] = static_cast<int32_t>(i);
    }
  }
  // Shrink until valid: one candidate step down at a time of a split or integer knob, last
  // first (register tile sizes come after the block sizes that decide layouts, so those
  // survive the longest); booleans and annotations keep the reference's choice unless that
  // choice alone is what this workload cannot take (a reduction split where one slice holds
  // every weight): then the boolean goes back to its first option, before any size shrinks.
  for (int guard = 0; guard < 100000; ++guard) {
    TT_ASSIGN_OR_RETURN(Config c, target.config_from_digits(digits));
    if (target.is_valid(c)) return c;
    bool stepped = false;
    for (int j = static_cast<int>(digits.size()) - 1; j >= 0 && !stepped; --j) {
      const Knob& k = target.knobs()[j];
      if (digits[j] == 0 || !std::holds_alternative<bool>(k.options[0])) continue;
      std::vector<int32_t> reset = digits;
      reset[j] = 0;
      auto candidate = target.config_from_digits(reset);
      if (candidate && target.is_valid(*candidate)) {
        digits = reset;
        stepped = true;
      }
    }
    if (stepped) continue;
    for (int j = static_cast<int>(digits.size()) - 1; j >= 0 && !stepped; --j) {
      const Knob& k = target.knobs()[j];
      const bool sized =
          k.kind == KnobKind::kSplit || std::holds_alternative<int64_t>(k.options[0]);
      if (sized && digits[j] > 0) {
        --digits[j];
        stepped = true;
      }
    }
    if (!stepped) break;
  }
  return invalid_argument(target.template_name() + ": no valid config near the borrowed one");
}

}  // namespace tensortune::schedule_space
