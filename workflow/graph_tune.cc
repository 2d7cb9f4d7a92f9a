#include "workflow/graph_tune.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/driver/block_selection.h"
#include "compiler/graph/printer.h"
#include "records/record_store.h"
#include "schedule_space/task.h"
#include "support/stopwatch.h"
#include "tuner/graph_tuner/network_problem.h"
#include "tuner/graph_tuner/transform_costs.h"
#include "workflow/farm_transform_timer.h"
#include "workflow/graph_log.h"

namespace tensortune::workflow {
namespace {

namespace gt = tuner::graph_tuner;
namespace ss = schedule_space;

std::string blocks(const driver::TunedConfigs::Candidate& c) {
  return std::to_string(c.ic_block) + "/" + std::to_string(c.oc_block);
}

}  // namespace

Status graph_tune(const GraphTuneOptions& f) {
  const Stopwatch start;
  if (!f.tracker.empty() && f.device_key.empty())
    return invalid_argument(
        "--tracker needs --key (the device key whose devices time the "
        "layout transforms, the key the model was tuned on)");
  TT_ASSIGN_OR_RETURN(graph::Graph loaded, load_model(f.model));
  const ss::Target target = codegen::host_target();
  // Graph-best records are keyed by the model as compile loads it, and name the convolution
  // nodes compile blocks: a QDQ model's quantized ones are integer nodes of int8 workloads.
  const std::string fingerprint = graph::graph_fingerprint(loaded);
  TT_ASSIGN_OR_RETURN(graph::Graph model,
                      driver::convolutions_as_compiled(loaded, target, !f.model.no_int8, {}));
  const std::string here = codegen::host_device_key();
  const std::string key = f.device_key.empty() ? here : f.device_key;
  if (f.from_log.empty() && !std::filesystem::exists(f.db))
    return not_found("--db " + f.db +
                     " does not exist: tune the model into it first (tensortune "
                     "tune --model " +
                     f.model.model + " --db " + f.db + ")");
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  TT_ASSIGN_OR_RETURN(auto tuned,
                      driver::TunedConfigs::load(f.db, key, target.vector_lanes, false));

  if (!f.from_log.empty()) {
    const gt::NetworkProblem np = gt::build_network_problem(
        model, tuned, target, 1, [](const gt::Transform&) { return 0.0; });
    TT_ASSIGN_OR_RETURN(auto entries, import_graph_log(f.from_log, np, target));
    TT_RETURN_IF_ERROR(store->put_graph_best(fingerprint, key, entries));
    std::printf("imported %zu graph-best records for %s (device key %s) from %s into %s\n",
                entries.size(), model.name().c_str(), key.c_str(), f.from_log.c_str(),
                f.db.c_str());
    return ok_status();
  }
  const auto needed = gt::transforms_needed(model, tuned, target, f.top_k);
  measure::MeasureOptions timing;
  timing.timing.number = 1;
  timing.timing.repeat = 5;
  timing.timing.min_repeat_ms = 10;
  timing.threads = f.threads;
  timing.device_key = key;
  std::optional<gt::TransformTimer> timer;
  std::string where = "this machine";
  if (!f.tracker.empty()) {
    TT_ASSIGN_OR_RETURN(timer, farm_transform_timer({f.tracker, f.device_key, f.token_file,
                                                     f.tls_ca, f.tls_cert, f.tls_key},
                                                    target, timing));
    where = "the farm (key " + key + ")";
  } else if (key == here) {
    timer = gt::local_transform_timer(timing);
  } else {
    std::fprintf(stderr,
                 "device key %s is not this machine's (%s): layout transforms are estimated; "
                 "--tracker times them on a device of that key\n",
                 key.c_str(), here.c_str());
  }
  const bool tty = isatty(fileno(stderr));
  TT_ASSIGN_OR_RETURN(auto costs,
                      gt::transform_costs(
                          *store, key, needed, timer ? &*timer : nullptr,
                          [tty, &where](int done, int total) {
                            if (tty || done == total)
                              std::fprintf(stderr, "%stimed %d of %d new layout transforms on %s%s",
                                           tty ? "\r" : "", done, total, where.c_str(),
                                           done == total ? "\n" : "");
                          },
                          f.retime_transforms));
  for (const std::string& reason : costs.estimate_reasons)
    std::fprintf(stderr, "estimated, not measured: %s\n", reason.c_str());
  const gt::NetworkProblem np = gt::build_network_problem(
      model, tuned, target, f.top_k, [&](const gt::Transform& t) { return costs.seconds.at(t); });
  int tuned_nodes = 0;
  for (bool t : np.tuned) tuned_nodes += t;
  if (tuned_nodes == 0)
    return Error{ErrorCode::kFailedPrecondition,
                 "no conv node of " + model.name() + " has records of device key " + key + " in " +
                     f.db + ": tune it first (tensortune tune --model " + f.model.model + " --db " +
                     f.db + ")"};

  Expected<gt::Selection> chosen = f.solver == "dp"     ? gt::solve_dp(np.problem)
                                   : f.solver == "pbqp" ? gt::solve_pbqp(np.problem)
                                                        : gt::solve_selection(np.problem);
  if (!chosen) return chosen.error().with_context("--solver " + f.solver);
  const std::vector<int> fastest(np.nodes.size(), 0);
  const double fastest_s = np.problem.cost(fastest);

  std::printf("%-28s %-42s %9s %9s %10s\n", "conv node", "workload", "fastest", "chosen",
              "kernel ms");
  std::vector<records::RecordStore::GraphBestEntry> entries;
  int changed = 0;
  for (size_t n = 0; n < np.nodes.size(); ++n) {
    const auto& c = np.candidates[n][static_cast<size_t>(chosen->choice[n])];
    changed += chosen->choice[n] != 0;
    std::printf("%-28s %-42s %9s %9s %10.3f%s\n", np.nodes[n].c_str(),
                ss::describe_workload(np.workloads[n]).c_str(), blocks(np.candidates[n][0]).c_str(),
                blocks(c).c_str(), c.seconds * 1e3,
                np.tuned[n] ? "" : "  (untuned: default config)");
    if (np.tuned[n]) entries.push_back({np.nodes[n], c.workload_key, c.entity_json});
  }
  TT_RETURN_IF_ERROR(store->put_graph_best(fingerprint, key, entries));
  if (!f.export_log.empty())
    TT_RETURN_IF_ERROR(export_graph_log(f.export_log, np, chosen->choice, key, *store));
  std::printf(
      "layout transforms: %zu priced (%d measured now on %s, %d reused from %s, %d estimated)\n"
      "convolutions + transforms, estimated: %.3f ms with every workload's fastest record, "
      "%.3f ms graph-tuned (%d of %zu nodes differ; %s%s)\n"
      "wrote %zu graph-best records for %s (fingerprint %s, device key %s) in %.1f s; "
      "`tensortune compile --model %s --records %s` uses them first\n",
      needed.size(), costs.measured, where.c_str(), costs.reused, f.db.c_str(), costs.estimated,
      fastest_s * 1e3, chosen->cost * 1e3, changed, np.nodes.size(), chosen->method.c_str(),
      chosen->exact ? ", optimal" : ", heuristic", entries.size(), model.name().c_str(),
      fingerprint.c_str(), key.c_str(), start.seconds(), f.model.model.c_str(), f.db.c_str());
  return ok_status();
}

}  // namespace tensortune::workflow
