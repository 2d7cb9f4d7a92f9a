#pragma once
/// \file
/// A network compiled for a range of sequence lengths (`compile --input-shape
/// input_ids=1x1..512`): one compiled network per bucket length (graph/sequence_range.h), each
/// with its padding masked, in one file whose buckets share their equal blobs (the weights, once).
///
///   "TTRNG001"  the container of artifact_codec.h; its header holds the plan (range, inputs,
///   masks, output axes) and per bucket its length and its network's header
///
/// Reading checks what read_network checks; a bucket's network is decoded when it is asked
/// for, so a process that serves short sequences never holds the long buckets' code.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/graph/sequence_range.h"
#include "compiler/runtime/artifact.h"
#include "compiler/runtime/compiled_network.h"
#include "support/error.h"

namespace tensortune::runtime {

/// Builds a ranged artifact one bucket at a time, holding at most two buckets' networks: each is
/// encoded once the next is added, the kernel steps whose output rows are the tokens marked
/// (Step::rows_follow_sequence: the same output has each bucket's length of rows in both).
class RangedArtifactWriter {
 public:
  explicit RangedArtifactWriter(graph::SequencePlan plan);
  ~RangedArtifactWriter();
  /// Buckets in ascending order of length.
  void add(int64_t bucket, CompiledNetwork network);
  std::string finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class RangedArtifact {
 public:
  /// `what` names the source in errors.
  static Expected<RangedArtifact> parse(const std::string& bytes, const std::string& what);

  const std::string& model() const { return model_; }
  const graph::SequencePlan& plan() const { return plan_; }
  const std::vector<int64_t>& buckets() const { return buckets_; }
  /// The default thread count of run and bench (compile --threads).
  int threads() const { return threads_; }
  /// Decodes bucket `index`'s network (kDataLoss naming the source where it is malformed).
  Expected<CompiledNetwork> network(size_t index) const;

 private:
  std::string what_, model_;
  int threads_ = 1;
  graph::SequencePlan plan_;
  std::vector<int64_t> buckets_;
  std::vector<std::string> headers_;  ///< each bucket's network header (JSON text)
  std::shared_ptr<const std::vector<std::string>> blobs_;
};

/// Whether `bytes` (a file's first bytes suffice) is a ranged artifact.
bool is_ranged_artifact(const std::string& bytes);

}  // namespace tensortune::runtime
