#pragma once
/// \file
/// Sequence lengths that vary: a graph compiled at a bucket length B runs a sequence of length
/// L <= B exactly, its inputs padded to B along the sequence axis, when every real position
/// (index < L on each sequence axis) of every value computes what the graph at length L
/// computes there. Row-wise work (dense layers, layer norms over the hidden axis, element-wise
/// ops) never mixes positions; what does is attention's softmax over the keys, and that is
/// masked: an add of kSequenceMaskInput (0 at real positions, -infinity at padded ones) before
/// it, so the padded keys weigh exactly 0 and the product with V that follows adds nothing of
/// theirs. Anything else that mixes positions along the sequence (a mean over the tokens, a
/// convolution along it, a concat onto it, reading its last token) is refused, naming the node:
/// padding it would change what the real positions compute.
///
/// The analysis compares the graph at two lengths of the range: an axis is a sequence axis
/// where its extent is the length itself at both; an extent that varies any other way (the
/// length times the heads, the length plus one) is refused. A constant that differs between
/// the two (positions, a causal mask) must agree on the shorter one's positions.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "support/error.h"

namespace tensortune::graph {

/// A graph input's axis that carries the sequence length.
struct SequenceInput {
  std::string name;
  int axis = 0;
  friend bool operator==(const SequenceInput&, const SequenceInput&) = default;
};

/// The lengths [lo, hi] an artifact serves, and the inputs whose axes carry the length (all
/// of them the same length: BERT's token ids and attention mask).
struct SequenceRange {
  int64_t lo = 1, hi = 1;
  std::vector<SequenceInput> inputs;
  /// The bucket lengths, ascending, the last hi (empty: sequence_buckets' default).
  std::vector<int64_t> buckets;
};

/// What running a bucket's graph on a shorter sequence takes.
struct SequencePlan {
  SequenceRange range;
  /// A softmax whose axis runs over the sequence, masked before it.
  struct Mask {
    std::string node;
    int axis = 0;
  };
  std::vector<Mask> masks;
  /// Per graph output, its sequence axes (what the runtime cuts back to the real length).
  std::vector<std::vector<int>> output_axes;
};

/// The graph input a masked graph takes: float32 [bucket], 0 where the position is real,
/// -infinity where it is padding. The runtime fills it; users never pass it.
inline constexpr char kSequenceMaskInput[] = "tensortune.sequence_mask";

/// The bucket lengths that cover [lo, hi]: the powers of two from the first at or above lo,
/// then hi itself where it is none (1..512: 1, 2, 4, ..., 512; 100..300: 128, 256, 300). With
/// `half_octaves`, also 1.5 times each power of two (1, 2, 3, 4, 6, 8, 12, ..., 384, 512): a
/// length pads by at most a third instead of nearly doubling, for twice the buckets.
std::vector<int64_t> sequence_buckets(int64_t lo, int64_t hi, bool half_octaves = false);

/// `range.buckets` where given (checked: ascending, inside the range, the last hi), else the
/// default scheme's (half octaves).
Expected<std::vector<int64_t>> buckets_of(const SequenceRange& range);

/// The smallest bucket at or above `length` (the caller checks the range first), and its index
/// in `buckets` (ascending).
int64_t bucket_for_length(const std::vector<int64_t>& buckets, int64_t length);
size_t bucket_index_for_length(const std::vector<int64_t>& buckets, int64_t length);

/// `graph_at(L)` is the model with its sequence inputs at length L. The plan, or an error
/// naming the node (and its operator) that padding would make inexact, a sequence input whose
/// axis does not exist, or a graph whose structure changes with the length.
Expected<SequencePlan> plan_sequence_range(const SequenceRange& range,
                                           const std::function<Expected<Graph>(int64_t)>& graph_at);

/// The graph at a bucket length with the plan's masks: kSequenceMaskInput as a last input,
/// added (reshaped to broadcast along the softmax's axis) before each masked softmax.
Expected<Graph> mask_sequence_padding(const Graph& at_bucket, const SequencePlan& plan,
                                      int64_t bucket);

/// kSequenceMaskInput's value for `length` real positions of `bucket`.
Tensor sequence_mask(int64_t bucket, int64_t length);

/// `t` cut or zero-padded to `shape` (same rank): element c is t's at c where c is inside t,
/// else zero. Pads inputs to a bucket and cuts outputs back to the real length.
Tensor resize_box(const Tensor& t, const Shape& shape);

}  // namespace tensortune::graph
