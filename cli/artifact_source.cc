// Implements artifact_source.h.
#include "cli/artifact_source.h"

#include <algorithm>
#include <fstream>

#include "cli/commands.h"
#include "compiler/runtime/artifact.h"

namespace tensortune::cli {

Expected<int> gpu_for(const runtime::CompiledNetwork& net, int gpu, bool emulate) {
  if (gpu < 0) return 0;
  if (emulate)
    return invalid_argument("--gpu " + std::to_string(gpu) + ": --emulate runs on the CPU");
  if (net.target != runtime::TargetKind::kCuda)
    return invalid_argument("--gpu " + std::to_string(gpu) + ": " + net.model +
                            " is compiled for " + runtime::describe_target(net) +
                            ", which runs on the CPU");
  return gpu;
}

Expected<std::shared_ptr<runtime::CompiledNetwork>> network_for(const std::string& artifact,
                                                                const workflow::ModelOptions& model,
                                                                int threads,
                                                                int64_t max_artifact_bytes) {
  if (!artifact.empty() && !model.model.empty())
    return invalid_argument("give an artifact or --model, not both");
  if (artifact.empty() && model.model.empty())
    return invalid_argument("give an artifact (net.tt from tensortune compile) or --model");
  if (!artifact.empty()) {
    TT_ASSIGN_OR_RETURN(runtime::CompiledNetwork net,
                        runtime::read_network(artifact, max_artifact_bytes));
    return std::make_shared<runtime::CompiledNetwork>(std::move(net));
  }
  TT_ASSIGN_OR_RETURN(runtime::CompiledNetwork net,
                      workflow::compile_model(model, std::max(threads, 1)));
  return std::make_shared<runtime::CompiledNetwork>(std::move(net));
}

Expected<std::shared_ptr<const runtime::RangedArtifact>> ranged_artifact(const std::string& path,
                                                                         int64_t max_bytes) {
  if (path.empty()) return std::shared_ptr<const runtime::RangedArtifact>();
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  if (!in.read(magic, sizeof magic) || !runtime::is_ranged_artifact(std::string(magic, 8)))
    return std::shared_ptr<const runtime::RangedArtifact>();
  TT_ASSIGN_OR_RETURN(std::string bytes, runtime::read_artifact_bytes(path, max_bytes));
  TT_ASSIGN_OR_RETURN(auto artifact, runtime::RangedArtifact::parse(bytes, path));
  return std::make_shared<const runtime::RangedArtifact>(std::move(artifact));
}

graph::Graph inputs_at_length(const graph::Graph& g, const graph::SequencePlan& plan,
                              int64_t length) {
  graph::Graph out(g.name());
  for (graph::ValueId in : g.inputs()) {
    graph::TensorType type = g.type(in);
    for (const auto& s : plan.range.inputs)
      if (s.name == g.value(in).name) type.shape[static_cast<size_t>(s.axis)] = length;
    out.add_input(g.value(in).name, type);
  }
  return out;
}

Expected<int64_t> length_in_range(int64_t length, const graph::SequencePlan& plan) {
  if (length == 0) return plan.range.hi;
  if (length < plan.range.lo || length > plan.range.hi)
    return invalid_argument("--sequence-length " + std::to_string(length) +
                            " is outside the artifact's range " + std::to_string(plan.range.lo) +
                            ".." + std::to_string(plan.range.hi));
  return length;
}

void add_artifact_limit(CLI::App& cmd, int64_t& max_bytes) {
  cmd.add_option("--max-artifact-bytes", max_bytes, "a larger artifact is refused unread")
      ->check(at_least(1))
      ->capture_default_str()
      ->group("Limits");
}

}  // namespace tensortune::cli
