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

namespace tensortune::schedule_space {

enum class KnobKind { kSplit, kOther, kAnnotate };

/// "sp", "ot" or "an".
const char* knob_kind_tag(KnobKind kind);

using KnobValue = std::variant<std::vector<int64_t>, int64_t, bool, std::string>;

struct Knob {
  std::string name;
  KnobKind kind = KnobKind::kOther;
  std::vector<KnobValue> options;
};

/// How split candidates are generated for an axis of length n (AutoTVM's policies).
enum class SplitPolicy {
  kFactors,  ///< divisors of n: no tail
  kVerbose,  ///< divisors of n and powers of two <= n, ascending: tails allowed
};

/// The candidates of a `num_outputs`-way split of an axis of length `n`: entities
/// [-1, f1, ..., f_{k-1}] whose inner factors (each from the policy's set, each <= max_factor)
/// multiply to at most n, dividing n unless the policy allows tails. Lexicographic order.
Knob make_split_knob(std::string name, int64_t n, int num_outputs, SplitPolicy policy,
                     int64_t max_factor = INT64_MAX);

Knob make_other_knob(std::string name, std::vector<KnobValue> options);

/// Divisors of n, ascending.
std::vector<int64_t> divisors(int64_t n);

std::string knob_value_to_string(const KnobValue& v);

}  // namespace tensortune::schedule_space
