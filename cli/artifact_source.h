#pragma once
// What run and bench load: an artifact (one network or a ranged one) or a model compiled in
// memory, the GPU to run it on, and the inputs of a ranged artifact's lengths.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "compiler/graph/graph.h"
#include "compiler/graph/sequence_range.h"
#include "compiler/runtime/compiled_network.h"
#include "compiler/runtime/ranged_artifact.h"
#include "support/error.h"
#include "workflow/model_source.h"

namespace tensortune::cli {

/// The GPU a network runs on: --gpu where given (only for a network compiled for a GPU, and not
/// with --emulate), else GPU 0.
Expected<int> gpu_for(const runtime::CompiledNetwork& net, int gpu, bool emulate);

/// The artifact, or the model compiled for `threads` (exactly one of them given).
Expected<std::shared_ptr<runtime::CompiledNetwork>> network_for(const std::string& artifact,
                                                                const workflow::ModelOptions& model,
                                                                int threads,
                                                                int64_t max_artifact_bytes);

/// The ranged artifact at `path`, or nothing where it is a one-network artifact (or none).
Expected<std::shared_ptr<const runtime::RangedArtifact>> ranged_artifact(const std::string& path,
                                                                         int64_t max_bytes);

/// A graph with `g`'s inputs, their sequence axes at `length` (what --input NAME=random makes).
graph::Graph inputs_at_length(const graph::Graph& g, const graph::SequencePlan& plan,
                              int64_t length);

/// --sequence-length: `length` inside the plan's range (0: its top), else an error naming both.
Expected<int64_t> length_in_range(int64_t length, const graph::SequencePlan& plan);

/// --max-artifact-bytes.
void add_artifact_limit(CLI::App& cmd, int64_t& max_bytes);

}  // namespace tensortune::cli
