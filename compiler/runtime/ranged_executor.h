#pragma once
/// \file
/// Runs a ranged artifact on any length of its range: the inputs' length picks the smallest
/// bucket that holds it, the sequence inputs are zero-padded to the bucket, the padding masked
/// (graph/sequence_range.h), and the outputs cut back to the length. Each bucket's network is
/// loaded the first time a length needs it.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/runtime/executor.h"
#include "compiler/runtime/ranged_artifact.h"
#include "support/error.h"

namespace tensortune::runtime {

class RangedExecutable {
 public:
  /// Loads the smallest bucket at once, so that a CPU or GPU the artifact cannot run on is
  /// refused here (Executable::load's errors).
  static Expected<std::unique_ptr<RangedExecutable>> load(
      std::shared_ptr<const RangedArtifact> artifact, int threads, bool emulate = false,
      int gpu = 0);
  ~RangedExecutable();

  const RangedArtifact& artifact() const { return *artifact_; }

  /// The sequence length of these inputs: kInvalidArgument naming the input, its shape and the
  /// range where a sequence input is missing, has no such axis, lies outside the range, or
  /// disagrees with another sequence input.
  Expected<int64_t> length_of(const std::map<std::string, graph::Tensor>& inputs) const;

  /// Sets the inputs (padded) and the mask on the bucket of their length and returns that
  /// bucket's executable, to run or time; `outputs` then cuts its outputs to the length.
  Expected<Executable*> prepare(const std::map<std::string, graph::Tensor>& inputs);
  /// The last prepared bucket's outputs after its run, cut back to the length.
  std::vector<graph::Tensor> outputs() const;

  /// prepare, run, outputs.
  Expected<std::vector<graph::Tensor>> run(const std::map<std::string, graph::Tensor>& inputs);

  /// Bucket `index`'s executable, loaded on first use (its graph names the inputs and outputs).
  Expected<Executable*> bucket(size_t index);

 private:
  RangedExecutable(std::shared_ptr<const RangedArtifact> artifact, int threads, bool emulate,
                   int gpu);

  std::shared_ptr<const RangedArtifact> artifact_;
  int threads_ = 1, gpu_ = 0;
  bool emulate_ = false;
  std::vector<std::unique_ptr<Executable>> loaded_;  ///< one slot per bucket
  Executable* last_ = nullptr;
  int64_t last_length_ = 0;
};

}  // namespace tensortune::runtime
