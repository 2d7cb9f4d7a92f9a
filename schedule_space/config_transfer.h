#pragma once
/// \file
/// Borrowing a tuned config for a workload nobody tuned (AutoTVM's fallback_with_reference_log,
/// improved): the reference workload is the one whose split axes share the most divisors with
/// ours, and its config is carried over knob by knob, then kept valid for our space.
/// Template-independent: it reads only knob names, kinds, candidates and split axis lengths.

#include "schedule_space/config_space.h"
#include "support/error.h"

namespace tensortune::schedule_space {

/// How well `reference`'s split axes fit `target`'s: over the split knobs both spaces have,
/// the sum of |divisors(ours) ∩ divisors(theirs)| / |divisors(ours)| (AutoTVM's score), plus
/// one when the two spaces have the same knob names (same kernel kind, e.g. 1x1 or not).
/// Higher is nearer; 0 when the spaces are of different templates.
double transfer_affinity(const ConfigSpace& target, const ConfigSpace& reference);

/// `reference_config` (a point of `reference`) carried into `target`: each split takes the
/// largest inner factors of our candidates that do not exceed the reference's; other knobs
/// take the reference's value where it is one of our candidates (integers: the largest not
/// above it), else our candidate 0. If the result is invalid in `target` (a register tile that
/// does not fit), split and integer knobs step down one candidate at a time, last knob first,
/// until it is valid; booleans keep their value. Fails when no valid point is reached.
Expected<Config> transfer_config(const ConfigSpace& target, const ConfigSpace& reference,
                                 const Config& reference_config);

}  // namespace tensortune::schedule_space
