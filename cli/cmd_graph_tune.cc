// `tensortune graph-tune`: every conv node's record chosen for the whole network:
// candidates from the DB, layout transforms measured on this machine (and kept in the DB), the
// DP or PBQP solver, graph-best records written back for `compile --records` to use first.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/graph_tune.h"
#include "cli/model_args.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/graph/printer.h"
#include "proto/rpc_channel.h"
#include "records/autotvm_log.h"
#include "records/record_decoding.h"
#include "records/record_store.h"
#include "schedule_space/task.h"
#include "support/stopwatch.h"
#include "support/work_queue.h"
#include "tracker/tracker_client.h"
#include "tuner/graph_tuner/network_problem.h"
#include "tuner/graph_tuner/transform_costs.h"

namespace tensortune::cli {
namespace {

namespace gt = tuner::graph_tuner;
namespace ss = schedule_space;

std::string blocks(const driver::TunedConfigs::Candidate& c) {
  return std::to_string(c.ic_block) + "/" + std::to_string(c.oc_block);
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

/// The choice from an AutoTVM graph-opt log: its records of blocked conv2d templates (direct or
/// Winograd) in order, one per conv node of the model in node order, each for that node's
/// workload.
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
    const ss::Template& t = ss::template_of(parsed->task);
    if (t.operator_kind() != ss::OperatorKind::kConv2d ||
        t.network_layout() != ss::NetworkLayout::kBlocked)
      continue;
    const size_t n = entries.size();
    if (n >= np.nodes.size())
      return invalid_argument(where + ": more conv2d records than the model's " +
                              std::to_string(np.nodes.size()) + " conv nodes");
    const auto& w = std::get<ss::Conv2dWorkload>(parsed->task.workload);
    if (ss::describe_workload(w) != ss::describe_workload(np.workloads[n]))
      return invalid_argument(where + " is for " + ss::describe_workload(w) + ", but conv node " +
                              np.nodes[n] + " (number " + std::to_string(n + 1) + ") is " +
                              ss::describe_workload(np.workloads[n]) +
                              ": the log is not this model's");
    const std::string key = ss::workload_key(parsed->task);
    const std::string entity = records::entity_to_json(parsed->entity);
    auto decoded = records::decode_record(key, entity, target);
    if (!decoded) return decoded.error().with_context(where);
    entries.push_back({np.nodes[n], key, entity});
  }
  if (entries.size() != np.nodes.size())
    return invalid_argument(path + " has " + std::to_string(entries.size()) +
                            " blocked conv2d records; the model has " +
                            std::to_string(np.nodes.size()) + " conv nodes");
  return entries;
}

/// Times transforms on the farm's devices of the key: one job each, as many at once as the key
/// has slots (at most 16), so that a farm times them in parallel.
Expected<gt::TransformTimer> farm_transform_timer(const GraphTuneFlags& f, const ss::Target& target,
                                                  const measure::MeasureOptions& options) {
  TT_ASSIGN_OR_RETURN(
      auto e, wire::tracker_endpoint(f.tracker, f.token_file, f.tls_ca, f.tls_cert, f.tls_key));
  TT_ASSIGN_OR_RETURN(std::shared_ptr<tracker::TrackerClient> client,
                      tracker::TrackerClient::connect(e));
  TT_ASSIGN_OR_RETURN(auto status, client->status());
  int slots = 0;
  for (const auto& q : status.queues())
    if (q.device_key() == f.device_key) slots += q.slots();
  if (slots == 0)
    return Error{ErrorCode::kFailedPrecondition, "tracker " + f.tracker + " has no device of key " +
                                                     f.device_key +
                                                     " to time the layout transforms on"};
  tracker::FarmTiming timing;
  timing.number = options.timing.number;
  timing.repeat = options.timing.repeat;
  timing.min_repeat_ms = options.timing.min_repeat_ms;
  timing.timeout_s = options.timing.timeout_s;
  timing.threads = options.threads;
  const int parallel = std::clamp(slots, 1, 16);
  const std::string key = f.device_key;
  return gt::TransformTimer([=](const std::vector<gt::Transform>& transforms,
                                const std::function<void(int, int)>& progress) {
    std::vector<gt::TransformTiming> out(transforms.size(), unavailable("not timed"));
    std::mutex mu;
    int done = 0;
    for_each_item(transforms.size(), parallel, [&](size_t i) {
      auto r = client->measure_layout_transform(gt::transform_workload(transforms[i]), target,
                                                timing, key, "graph-tune layout transforms");
      std::lock_guard<std::mutex> lock(mu);
      if (!r)
        out[i] = r.error();
      else if (!r->ok())
        out[i] = Error{ErrorCode::kInternal,
                       std::string(ss::measure_error_name(r->error_no)) + ": " + r->error_msg};
      else
        out[i] = r->mean_cost();
      if (progress) progress(++done, static_cast<int>(transforms.size()));
    });
    return out;
  });
}

}  // namespace

Status graph_tune(const GraphTuneFlags& f) {
  const Stopwatch start;
  if (!f.tracker.empty() && f.device_key.empty())
    return invalid_argument(
        "--tracker needs --key (the device key whose devices time the "
        "layout transforms, the key the model was tuned on)");
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
  measure::MeasureOptions timing;
  timing.timing.number = 1;
  timing.timing.repeat = 5;
  timing.timing.min_repeat_ms = 10;
  timing.threads = f.threads;
  timing.device_key = key;
  std::optional<gt::TransformTimer> timer;
  std::string where = "this machine";
  if (!f.tracker.empty()) {
    TT_ASSIGN_OR_RETURN(timer, farm_transform_timer(f, target, timing));
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
  TT_RETURN_IF_ERROR(store->put_graph_best(graph::graph_fingerprint(model), key, entries));
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
      graph::graph_fingerprint(model).c_str(), key.c_str(), start.seconds(), f.model.model.c_str(),
      f.db.c_str());
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
  c->add_option("--tracker", f->tracker,
                "HOST:PORT of a tracker: time the layout transforms on its devices of --key")
      ->group("Farm");
  c->add_option("--key", f->device_key,
                "the device key (with --tracker: whose devices time the transforms); the same "
                "as --device-key")
      ->group("Farm");
  c->add_option("--token-file", f->token_file, "with --tracker: file holding the tracker's token")
      ->group("Farm");
  c->add_option("--tls-ca", f->tls_ca, "with --tracker: CA certificate (PEM) of the tracker")
      ->group("Farm");
  add_client_certificate_options(*c, f->tls_cert, f->tls_key, "Farm");
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
  c->add_flag("--retime-transforms", f->retime_transforms,
              "delete the DB's layout-transform times (every device key) and time the needed ones "
              "again (after a tensortune upgrade that changed how they are timed)");
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
      "On a farm, the transforms are timed on devices of the key the model was tuned on:\n"
      "  tensortune tune --model resnet-18 --db r18.db --tracker farm:9190 --key x86-avx512\n"
      "  tensortune graph-tune --model resnet-18 --db r18.db --tracker farm:9190 --key x86-avx512\n"
      "Layout-transform times are kept in the DB (table layout_transforms): a second run measures "
      "only new ones. Graph-best records are keyed by the model's fingerprint (its structure and "
      "shapes) and the device key.");
  c->callback([&exit_code, f] {
    if (Status s = graph_tune(*f); !s) exit_code = report_error(s.error());
  });
}

}  // namespace tensortune::cli
