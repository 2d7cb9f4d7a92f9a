#pragma once
/// \file
/// Knobs: the named choices a schedule template exposes. A knob has an ordered, finite list of
/// candidate values; a config picks one candidate per knob.
///
/// Kinds follow AutoTVM's log entity types: "sp" (split: sizes from the outside in, outermost
/// -1 meaning "the rest"), "ot" (other: an integer or boolean), "an" (annotation: a name such as
/// "none", "unroll" or "vec").

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "support/error.h"

namespace tensortune::schedule_space {

enum class KnobKind { kSplit, kOther, kAnnotate };

/// "sp", "ot" or "an".
const char* knob_kind_tag(KnobKind kind);

using KnobValue = std::variant<std::vector<int64_t>, int64_t, bool, std::string>;

struct Knob {
  std::string name;
  KnobKind kind = KnobKind::kOther;
  std::vector<KnobValue> options;
  /// Splits: the length of the split axis, and whether the inner factors may leave a tail
  /// (their product need not divide it). Used to read entities that spell out the outermost
  /// factor instead of -1.
  int64_t axis_length = 0;
  bool allows_tail = false;
};

/// A split value in the canonical form of the candidates: [-1, inner factors...]. Older
/// AutoTVM logs write the outermost factor ([2, 32] for an axis of 64); it must be the one
/// the inner factors leave (axis / product, rounded up where the knob allows a tail).
/// Fails naming the knob, the value and the axis length.
Expected<std::vector<int64_t>> canonical_split(const Knob& knob, const std::vector<int64_t>& sizes);

/// How split candidates are generated for an axis of length n (AutoTVM's policies).
enum class SplitPolicy {
  kFactors,  ///< divisors of n: no tail
  kVerbose,  ///< divisors of n and powers of two <= n, ascending: tails allowed
};

/// The candidates of a `num_outputs`-way split of an axis of length `n`: entities
/// [-1, f1, ..., f_{k-1}] whose inner factors (each from the policy's set, each <= max_factor)
/// multiply to at most n, dividing n unless the policy allows tails. In AutoTVM's order (its
/// `_generate_space` DFS), so that flat indices match its logs: entity position 1 varies
/// fastest, the last position slowest (2-way splits simply ascend).
Knob make_split_knob(std::string name, int64_t n, int num_outputs, SplitPolicy policy,
                     int64_t max_factor = INT64_MAX);

Knob make_other_knob(std::string name, std::vector<KnobValue> options);

/// Divisors of n, ascending.
std::vector<int64_t> divisors(int64_t n);

std::string knob_value_to_string(const KnobValue& v);

}  // namespace tensortune::schedule_space
