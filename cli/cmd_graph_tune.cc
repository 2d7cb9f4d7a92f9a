// `tensortune graph-tune`: every conv node's record chosen for the whole network (issue 13):
// candidates from the DB, layout transforms measured on this machine (and kept in the DB), the
// DP or PBQP solver, graph-best records written back for `compile --records` to use first.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/commands.h"
#include "cli/graph_tune.h"
#include "cli/model_args.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/graph/printer.h"
#include "records/autotvm_log.h"
#include "records/record_store.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "tuner/graph_tuner/network_problem.h"
#include "tuner/graph_tuner/transform_costs.h"

namespace tensortune::cli {
namespace {

namespace gt = tuner::graph_tuner;
namespace ss = schedule_space;

std::string blocks(const ss::Conv2dSchedule& s) {
  return std::to_string(s.ic_bn) + "/" + std::to_string(s.oc_bn);
}

/// AutoTVM's graph-opt log: the chosen record of every tuned conv node, in node order.
Status export_graph_log(const std::string& path, const gt::NetworkProblem& np,
                        const std::vector<int>& choice, const std::string& device_key,
                        records::RecordStore& store) {
  TT_ASSIGN_OR_RETURN(auto all, store.all_records());
  std::map<std::pair<std::string, std::string>, const records::StoredRecord*> best;
  for (const auto& r : all) {
    if (!r.result.ok() || r.result.device_key != device_key) continue;
    auto& slot = best[{r.task.workload_key, r.entity_json}];
    if (!slot || r.result.mean_cost() < slot->result.mean_cost()) slot = &r;
  }
  std::ofstream out(path);
  if (!out) return invalid_argument("--export-log: cannot write " + path);
  int lines = 0;
  for (size_t n = 0; n < np.nodes.size(); ++n) {
    if (!np.tuned[n]) continue;
    const auto& c = np.candidates[n][static_cast<size_t>(choice[n])];
    auto it = best.find({c.workload_key, c.entity_json});
    if (it == best.end()) continue;
    TT_ASSIGN_OR_RETURN(std::string line, records::to_autotvm_line(*it->second));
    out << line << "\n";
    ++lines;
  }
  if (!out) return invalid_argument("--export-log: cannot write " + path);
  std::printf(
      "wrote %s: %d records, one per tuned conv node in node order (AutoTVM's graph opt "
      "log, what apply_graph_best reads)\n",
      path.c_str(), lines);
  return ok_status();
}

/// The choice from an AutoTVM graph-opt log: its conv2d_NCHWc records in order, one per conv
/// node of the model in node order, each for that node's workload.
Expected<std::vector<records::RecordStore::GraphBestEntry>> import_graph_log(
    const std::string& path, const gt::NetworkProblem& np, const ss::Target& target) {
  std::ifstream in(path);
  if (!in) return not_found("--from-log: cannot open " + path);
  std::vector<records::RecordStore::GraphBestEntry> entries;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + " line " + std::to_string(number);
    auto parsed = records::parse_autotvm_line(line, target.vector_lanes);
    if (!parsed) return parsed.error().with_context(where);
    if (parsed->task.template_name != ss::kConv2dNCHWc) continue;
    const size_t n = entries.size();
    if (n >= np.nodes.size())
      return invalid_argument(where + ": more conv2d_NCHWc records than the model's " +
                              std::to_string(np.nodes.size()) + " conv nodes");
    const auto& w = std::get<ss::Conv2dWorkload>(parsed->task.workload);
    if (ss::describe_workload(w) != ss::describe_workload(np.workloads[n]))
      return invalid_argument(where + " is for " + ss::describe_workload(w) + ", but conv node " +
                              np.nodes[n] + " (number " + std::to_string(n + 1) + ") is " +
                              ss::describe_workload(np.workloads[n]) +
                              ": the log is not this model's");
    const ss::ConfigSpace space = ss::conv2d_nchwc_space(w, target.vector_lanes);
    auto config = space.config_from_entity(parsed->entity);
    if (!config) return config.error().with_context(where);
    entries.push_back(
        {np.nodes[n], ss::workload_key(parsed->task), records::entity_to_json(parsed->entity)});
  }
  if (entries.size() != np.nodes.size())
    return invalid_argument(path + " has " + std::to_string(entries.size()) +
                            " conv2d_NCHWc records; the model has " +
                            std::to_string(np.nodes.size()) + " conv nodes");
  return entries;
}

}  // namespace

Status graph_tune(const GraphTuneFlags& f) {
  const auto start = std::chrono::steady_clock::now();
  TT_ASSIGN_OR_RETURN(graph::Graph model, load_model(f.model));
  const ss::Target target = codegen::host_target();
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
    TT_RETURN_IF_ERROR(store->put_graph_best(graph::graph_fingerprint(model), key, entries));
    std::printf("imported %zu graph-best records for %s (device key %s) from %s into %s\n",
                entries.size(), model.name().c_str(), key.c_str(), f.from_log.c_str(),
                f.db.c_str());
    return ok_status();
  }
  const auto needed = gt::transforms_needed(model, tuned, target, f.top_k);
  const bool measure_here = key == here;
  if (!measure_here)
    std::fprintf(stderr,
                 "device key %s is not this machine's (%s): layout transforms are estimated, "
                 "not measured\n",
                 key.c_str(), here.c_str());
  const bool tty = isatty(fileno(stderr));
  TT_ASSIGN_OR_RETURN(
      auto costs,
      gt::transform_costs(*store, key, needed, measure_here, f.threads, [tty](int done, int total) {
        if (tty || done == total)
          std::fprintf(stderr, "%smeasured %d of %d new layout transforms%s", tty ? "\r" : "", done,
                       total, done == total ? "\n" : "");
      }));
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
                ss::describe_workload(np.workloads[n]).c_str(),
                blocks(np.candidates[n][0].schedule).c_str(), blocks(c.schedule).c_str(),
                c.seconds * 1e3, np.tuned[n] ? "" : "  (untuned: default config)");
    if (np.tuned[n]) entries.push_back({np.nodes[n], c.workload_key, c.entity_json});
  }
  TT_RETURN_IF_ERROR(store->put_graph_best(graph::graph_fingerprint(model), key, entries));
  if (!f.export_log.empty())
    TT_RETURN_IF_ERROR(export_graph_log(f.export_log, np, chosen->choice, key, *store));
  std::printf(
      "layout transforms: %zu priced (%d measured now, %d reused from %s, %d estimated)\n"
      "convolutions + transforms, estimated: %.3f ms with every workload's fastest record, "
      "%.3f ms graph-tuned (%d of %zu nodes differ; %s%s)\n"
      "wrote %zu graph-best records for %s (fingerprint %s, device key %s) in %.1f s; "
      "`tensortune compile --model %s --records %s` uses them first\n",
      needed.size(), costs.measured, costs.reused, f.db.c_str(), costs.estimated, fastest_s * 1e3,
      chosen->cost * 1e3, changed, np.nodes.size(), chosen->method.c_str(),
      chosen->exact ? ", optimal" : ", heuristic", entries.size(), model.name().c_str(),
      graph::graph_fingerprint(model).c_str(), key.c_str(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      f.model.model.c_str(), f.db.c_str());
  return ok_status();
}

void add_graph_tune_command(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<GraphTuneFlags>();
  CLI::App* c = app.add_subcommand(
      "graph-tune",
      "Choose every conv node's record for the whole network (kernel times + measured layout "
      "transforms) and store them as graph-best records");
  add_model_flags(c, f->model, false);
  c->add_option("--db", f->db, "the record DB of a tuning run of this model")->required();
  c->add_option("--device-key", f->device_key,
                "records of this device key (default: this machine's; another key's transforms "
                "are estimated, not measured)");
  c->add_option("--top-k", f->top_k,
                "candidates per conv node: the fastest record of each block pair, this many")
      ->check(at_least(1))
      ->capture_default_str();
  c->add_option("--threads", f->threads, "threads the layout transforms are timed on")
      ->check(at_least(1))
      ->capture_default_str();
  c->add_option("--solver", f->solver,
                "auto (DP while its state fits, else PBQP), dp (exact) or pbqp (exact on "
                "series-parallel graphs, else a heuristic it reports)")
      ->check(CLI::IsMember({"auto", "dp", "pbqp"}))
      ->capture_default_str();
  c->add_option("--export-log", f->export_log,
                "also write AutoTVM's graph opt log (resnet-18_graph_opt.log: one record per conv "
                "node in node order, what apply_graph_best reads)");
  c->add_option("--from-log", f->from_log,
                "take the choice from an AutoTVM graph opt log instead of solving (its records "
                "must match the model's conv nodes in order)");
  c->footer(
      "\nThe flow: tune the model's tasks, graph-tune, compile.\n"
      "  tensortune tune --model resnet-18 --db r18.db\n"
      "  tensortune graph-tune --model resnet-18 --db r18.db\n"
      "  tensortune compile --model resnet-18 --records r18.db -o r18.tt\n"
      "Layout-transform times are kept in the DB (table layout_transforms): a second run measures "
      "only new ones. Graph-best records are keyed by the model's fingerprint (its structure and "
      "shapes) and the device key.");
  c->callback([&exit_code, f] {
    if (Status s = graph_tune(*f); !s) exit_code = report_error(s.error());
  });
}

}  // namespace tensortune::cli
