// `tensortune bench`: an artifact (or a model compiled in memory) timed end to end with the
// benchmark protocol, --profile per step; a ranged artifact at --sequence-length.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/artifact_source.h"
#include "cli/commands.h"
#include "cli/option_groups.h"
#include "compiler/runtime/benchmark.h"
#include "compiler/runtime/executor.h"
#include "compiler/runtime/ranged_executor.h"
#include "workflow/model_source.h"

namespace tensortune::cli {
namespace {

using runtime::CompiledNetwork;

struct BenchFlags {
  std::string artifact;
  workflow::ModelOptions model;
  int threads = 0;
  int gpu = -1;  ///< -1: not given (GPU 0)
  runtime::BenchOptions options;
  bool json = false;
  bool no_step_batching = false;
  int64_t max_artifact_bytes = runtime::kDefaultMaxArtifactBytes;
  int64_t sequence_length = 0;  ///< a ranged artifact's length to time; 0: the range's top
};

Status bench(const BenchFlags& f) {
  TT_ASSIGN_OR_RETURN(auto ranged, ranged_artifact(f.artifact, f.max_artifact_bytes));
  std::shared_ptr<const CompiledNetwork> net;
  std::unique_ptr<runtime::Executable> owned;
  std::unique_ptr<runtime::RangedExecutable> ranged_exe;
  runtime::Executable* exe = nullptr;
  std::string at_length;
  if (ranged) {
    const int threads = f.threads > 0 ? f.threads : ranged->threads();
    TT_ASSIGN_OR_RETURN(
        ranged_exe, runtime::RangedExecutable::load(ranged, threads, false, std::max(f.gpu, 0)));
    TT_ASSIGN_OR_RETURN(int64_t length, length_in_range(f.sequence_length, ranged->plan()));
    const auto& buckets = ranged->buckets();
    const size_t index = graph::bucket_index_for_length(buckets, length);
    TT_ASSIGN_OR_RETURN(runtime::Executable * first, ranged_exe->bucket(0));
    const graph::Graph g = inputs_at_length(first->network().graph, ranged->plan(), length);
    std::map<std::string, graph::Tensor> inputs;
    for (auto in : g.inputs())
      if (g.value(in).name != graph::kSequenceMaskInput)
        inputs[g.value(in).name] = workflow::random_input(g.type(in));
    TT_ASSIGN_OR_RETURN(exe, ranged_exe->prepare(inputs));
    net = std::shared_ptr<const CompiledNetwork>(std::shared_ptr<const CompiledNetwork>(),
                                                 &exe->network());  // not owned: exe's
    at_length = ", sequence length " + std::to_string(length) + " in bucket " +
                std::to_string(buckets[index]);
  } else {
    TT_ASSIGN_OR_RETURN(net, network_for(f.artifact, f.model, f.threads, f.max_artifact_bytes));
    const int threads = f.threads > 0 ? f.threads : net->threads;
    TT_ASSIGN_OR_RETURN(int gpu, gpu_for(*net, f.gpu, false));
    TT_ASSIGN_OR_RETURN(owned, runtime::Executable::load(net, threads, false, gpu));
    exe = owned.get();
    for (auto in : net->graph.inputs()) {
      TT_RETURN_IF_ERROR(
          exe->set_input(net->graph.value(in).name, workflow::random_input(net->graph.type(in))));
    }
  }
  exe->set_step_batching(!f.no_step_batching);
  TT_ASSIGN_OR_RETURN(runtime::BenchResult r, runtime::benchmark(*exe, f.options));
  if (f.json) {
    nlohmann::json steps = nlohmann::json::array();
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const auto& s = r.steps[i];
      steps.push_back(
          {{"label", s.label},
           {"node", s.node},
           {"output_elements", graph::num_elements(net->graph.type(net->steps.at(i).output).shape)},
           {"kind", runtime::step_kind_name(s.kind)},
           {"calls", s.calls},
           {"mean_ms", s.mean_ms},
           {"gflops", s.gflops},
           {"bytes", s.bytes}});
    }
    nlohmann::json out = {
        {"model", net->model},      {"opt_level", net->opt_level}, {"threads", r.threads},
        {"repeat", r.repeat},       {"number", r.number},          {"median_ms", r.median_ms},
        {"min_ms", r.min_ms},       {"max_ms", r.max_ms},          {"round_ms", r.round_ms},
        {"warmup_ms", r.warmup_ms}, {"gflops", r.gflops}};
    if (f.options.profile) {
      out["profile"] = steps;
      out["profile_sum_ms"] = r.profile_sum_ms;
      out["profiled_median_ms"] = r.profiled_median_ms;
    }
    std::printf("%s\n", out.dump(2).c_str());
    return ok_status();
  }
  std::printf(
      "%s (opt level %d%s): median %.3f ms per run (min %.3f, max %.3f; %.1f GFLOPS), %d rounds "
      "x %lld runs after 1 warm-up run, %d thread%s\n",
      net->model.c_str(), net->opt_level, at_length.c_str(), r.median_ms, r.min_ms, r.max_ms,
      r.gflops, r.repeat, static_cast<long long>(r.number), r.threads, r.threads == 1 ? "" : "s");
  if (f.options.profile) std::printf("%s", runtime::format_profile(*exe, r).c_str());
  return ok_status();
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto bf = std::make_shared<BenchFlags>();
  CLI::App* b = app.add_subcommand(
      "bench", "Time a compiled artifact end to end (--profile: per fusion group)");
  b->add_option("artifact", bf->artifact, "a .tt artifact from tensortune compile");
  add_artifact_limit(*b, bf->max_artifact_bytes);
  add_model_flags(b, bf->model, true, false);
  b->add_option("--threads", bf->threads, "threads (default: the artifact's)")->check(at_least(1));
  b->add_option("--gpu", bf->gpu, "a network compiled for cuda: time it on this GPU (default 0)")
      ->check(at_least(0));
  b->add_option("--repeat", bf->options.repeat, "timed rounds; the median is reported")
      ->check(at_least(1))
      ->capture_default_str();
  b->add_option("--number", bf->options.number,
                "runs per round (grown until a round lasts --min-repeat-ms)")
      ->check(at_least(1))
      ->capture_default_str();
  b->add_option("--min-repeat-ms", bf->options.min_repeat_ms, "shortest round")
      ->check(at_least(0))
      ->capture_default_str();
  b->add_flag("--profile", bf->options.profile,
              "also time every step (fusion group) under the same protocol and compare the sum "
              "with the end-to-end time");
  b->add_option("--sequence-length", bf->sequence_length,
                "an artifact compiled for a range of sequence lengths: time this length (default: "
                "the range's top), in the bucket that holds it")
      ->check(at_least(1));
  b->add_flag("--json", bf->json, "print JSON");
  b->add_flag("--no-step-batching", bf->no_step_batching,
              "hand each step to the thread pool on its own instead of running back-to-back "
              "parallel steps as one sequence (to measure what batching gains; same results)");
  b->footer(
      "\nProtocol: 1 warm-up run not counted, then --repeat rounds of --number runs on the steady "
      "clock; "
      "inputs are deterministic random data.\n"
      "Examples:\n  tensortune bench r18.tt --repeat 20 --profile\n  tensortune bench r18.tt "
      "--threads 2");
  b->callback([&exit_code, bf] {
    if (Status s = bench(*bf); !s) exit_code = report_error(s.error());
  });
}

}  // namespace tensortune::cli
