// `tensortune records best|stats|export|import|plot`.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/commands.h"
#include "cli/model_args.h"
#include "cli/svg_plot.h"
#include "compiler/codegen/llvm/kernel.h"
#include "proto/rpc_channel.h"
#include "records/autotvm_log.h"
#include "records/record_store.h"
#include "tracker/tracker_client.h"
#include "tuner/task_extraction.h"

namespace tensortune::cli {

namespace {

// A damaged entity in the DB shows as its text, not as an exception.
nlohmann::json entity_or_text(const std::string& text) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? nlohmann::json(text) : parsed;
}

struct RecordsFlags {
  std::string db = "tensortune.db";
  std::string output;
  std::string workload;
  bool json = false;
  bool json_lines = false;
  std::string format = "autotvm";
  bool skip_unsupported = false;
  std::string log;
  std::string device_key;
  std::string tracker, token_file, tls_ca;
  // records best's filters
  std::string template_filter;
  ModelFlags model;  ///< --model / --input-shape: the model's tasks only
  int threads = 0;
  std::string since, until;
  int top_k = 1;
};

// "2026-11-20", "2026-11-20T08:30:00" (UTC) or unix seconds; 0 for an empty flag.
Expected<double> parse_time(const std::string& flag, const std::string& text) {
  if (text.empty()) return 0.0;
  static const std::regex number("[0-9]+(\\.[0-9]+)?");
  if (std::regex_match(text, number)) return std::stod(text);
  std::tm tm{};
  for (const char* format : {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"}) {
    tm = std::tm{};
    const char* end = strptime(text.c_str(), format, &tm);
    if (end && *end == '\0') return static_cast<double>(timegm(&tm));
  }
  return invalid_argument(flag + " = '" + text +
                          "': a date (2026-11-20), a UTC time (2026-11-20T08:30:00) or unix "
                          "seconds");
}

// The filters of `records best` as the store and the tracker take them.
Expected<records::RecordStore::BestQuery> best_query(const RecordsFlags& f) {
  records::RecordStore::BestQuery q;
  q.template_name = f.template_filter;
  q.device_key = f.device_key;
  q.threads = f.threads;
  q.top_k = f.top_k;
  TT_ASSIGN_OR_RETURN(q.since, parse_time("--since", f.since));
  TT_ASSIGN_OR_RETURN(q.until, parse_time("--until", f.until));
  if (!f.workload.empty()) {
    static const std::regex shape("[0-9]+(x[0-9]+)*");
    if (f.workload[0] == '[')
      q.workload_keys = {f.workload};
    else if (std::regex_match(f.workload, shape))
      q.shape = f.workload;
    else
      return invalid_argument("--workload = '" + f.workload +
                              "': give a tensor shape such as 1x64x56x56 (data) or 64x64x3x3 "
                              "(kernel), or an exact workload key ([\"conv2d_NCHWc.x86\", ...])");
  }
  if (!f.model.model.empty()) {
    TT_ASSIGN_OR_RETURN(graph::Graph model, load_model(f.model));
    TT_ASSIGN_OR_RETURN(auto extraction, tuner::extract_tasks(model, codegen::host_target()));
    std::vector<std::string> keys;
    for (const auto& t : extraction.tasks) keys.push_back(schedule_space::workload_key(t.task));
    if (q.workload_keys.empty()) {
      q.workload_keys = keys;
    } else if (std::find(keys.begin(), keys.end(), q.workload_keys[0]) == keys.end()) {
      q.workload_keys.clear();  // the key is not one of the model's: nothing matches
      q.workload_keys.push_back("-");
    }
  }
  return q;
}

bool is_filtered(const records::RecordStore::BestQuery& q) {
  return !q.template_name.empty() || !q.shape.empty() || !q.workload_keys.empty() ||
         !q.device_key.empty() || q.threads != 0 || q.since != 0 || q.until != 0 || q.top_k > 1;
}

// The tracker archive's best records, in the record store's shape.
Expected<std::vector<records::BestRecord>> tracker_best(const RecordsFlags& f,
                                                        const records::RecordStore::BestQuery& q) {
  TT_ASSIGN_OR_RETURN(auto e, wire::tracker_endpoint(f.tracker, f.token_file, f.tls_ca));
  TT_ASSIGN_OR_RETURN(auto client, tracker::TrackerClient::connect(e));
  v1::BestRecordsRequest req;
  req.set_device_key(q.device_key);
  req.set_template_name(q.template_name);
  req.set_shape(q.shape);
  for (const auto& k : q.workload_keys) req.add_workload_keys(k);
  req.set_threads(q.threads);
  req.set_since(q.since);
  req.set_until(q.until);
  req.set_top_k(q.top_k);
  TT_ASSIGN_OR_RETURN(auto reply, client->best_records(req));
  std::vector<records::BestRecord> out;
  for (const auto& r : reply.records()) {
    records::BestRecord b;
    b.record.task.workload_key = r.workload_key();
    b.record.task.template_name = r.template_name();
    b.record.task.target = r.target();
    b.record.config_index = r.config_index();
    b.record.entity_json = r.entity_json();
    b.record.result.device_key = r.device_key();
    b.record.result.costs = {r.mean_cost_s()};
    b.record.result.threads = r.threads();
    b.gflops = r.gflops();
    b.measured = r.measured();
    out.push_back(std::move(b));
  }
  return out;
}

nlohmann::json best_json(const records::BestRecord& b) {
  const auto& r = b.record;
  return {{"workload_key", r.task.workload_key},
          {"template", r.task.template_name},
          {"target", r.task.target},
          {"device_key", r.result.device_key},
          {"ok", r.result.ok()},
          {"gflops", b.gflops},
          {"mean_cost_s",
           r.result.ok() ? nlohmann::json(r.result.mean_cost()) : nlohmann::json(nullptr)},
          {"config_index", r.config_index},
          {"entity", entity_or_text(r.entity_json)},
          {"threads", r.result.threads},
          {"measured", b.measured}};
}

std::string described_workload(const records::StoredRecord& r) {
  auto task = records::task_from_workload_key(r.task.workload_key, r.task.target, 16);
  return task ? schedule_space::describe_workload(task->workload) : r.task.workload_key;
}

Status run_best(const RecordsFlags& f) {
  TT_ASSIGN_OR_RETURN(const auto query, best_query(f));
  const bool filtered = is_filtered(query);
  std::vector<records::BestRecord> best;
  if (!f.tracker.empty()) {
    TT_ASSIGN_OR_RETURN(best, tracker_best(f, query));
  } else {
    if (!std::filesystem::exists(f.db)) return not_found("--db " + f.db + " does not exist");
    TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
    // Unfiltered, every group is listed, those whose every result failed too.
    if (filtered) {
      TT_ASSIGN_OR_RETURN(best, store->query_best(query));
    } else {
      TT_ASSIGN_OR_RETURN(best, store->best_all());
    }
  }
  if (best.empty() && filtered)
    std::fprintf(stderr, "no record in %s matches the filters\n",
                 f.tracker.empty() ? f.db.c_str() : f.tracker.c_str());
  if (f.json_lines) {
    // One object a line, written as they come: for answers too large for one document.
    for (const auto& b : best) std::printf("%s\n", best_json(b).dump().c_str());
    return ok_status();
  }
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& b : best) out.push_back(best_json(b));
    std::printf("%s\n", out.dump(2).c_str());
    return ok_status();
  }
  if (best.empty()) {
    if (!filtered)
      std::printf("%s has no records yet\n", f.tracker.empty() ? f.db.c_str() : f.tracker.c_str());
    return ok_status();
  }
  std::printf("%-17s %-50s %-11s %9s %9s %7s  %s\n", "template", "workload", "device", "GFLOPS",
              "mean ms", "trials", "best config");
  for (const auto& b : best) {
    const auto& r = b.record;
    auto task = records::task_from_workload_key(r.task.workload_key, r.task.target, 16);
    const std::string workload = described_workload(r);
    std::string config = "-";
    if (task && r.result.ok()) {
      auto space = schedule_space::make_config_space(*task);
      auto entity = records::entity_from_json(r.entity_json);
      if (space && entity) {
        auto c = space->config_from_entity(*entity);
        config = c ? space->describe(*c) : r.entity_json;
      }
    }
    if (r.result.ok()) {
      std::printf("%-17s %-50s %-11s %9.2f %9.4f %7lld  %s\n", r.task.template_name.c_str(),
                  workload.c_str(), r.result.device_key.c_str(), b.gflops,
                  r.result.mean_cost() * 1e3, static_cast<long long>(b.measured), config.c_str());
    } else {
      std::printf("%-17s %-50s %-11s %9s %9s %7lld  %s\n", r.task.template_name.c_str(),
                  workload.c_str(), r.result.device_key.c_str(), "-", "all fail",
                  static_cast<long long>(b.measured), "-");
    }
  }
  return ok_status();
}

std::string utc_date(double unix_seconds) {
  if (unix_seconds <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::gmtime(&t));
  return buf;
}

Status run_stats(const RecordsFlags& f) {
  if (!std::filesystem::exists(f.db)) return not_found("--db " + f.db + " does not exist");
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  TT_ASSIGN_OR_RETURN(auto s, store->stats());
  if (f.json) {
    nlohmann::json j = {{"db", f.db},
                        {"results", s.results},
                        {"failed", s.failed},
                        {"tasks", s.tasks},
                        {"configs", s.configs},
                        {"oldest", s.oldest},
                        {"newest", s.newest},
                        {"layout_transforms", s.transforms},
                        {"graph_best_models", s.graph_best_models},
                        {"bytes", s.bytes}};
    for (const auto& [k, n] : s.device_keys) j["device_keys"][k] = n;
    for (const auto& [t, n] : s.templates) j["templates"][t] = n;
    std::printf("%s\n", j.dump(2).c_str());
    return ok_status();
  }
  std::printf("%s: %.1f MiB\n", f.db.c_str(), double(s.bytes) / (1 << 20));
  std::printf("  results      %lld (%lld failed)\n", static_cast<long long>(s.results),
              static_cast<long long>(s.failed));
  std::printf("  workloads    %lld tasks (workload, target), %lld distinct configs\n",
              static_cast<long long>(s.tasks), static_cast<long long>(s.configs));
  for (const auto& [t, n] : s.templates)
    std::printf("    %-24s %lld tasks\n", t.c_str(), static_cast<long long>(n));
  std::printf("  device keys  %zu\n", s.device_keys.size());
  for (const auto& [k, n] : s.device_keys)
    std::printf("    %-24s %lld results\n", k.c_str(), static_cast<long long>(n));
  std::printf("  measured     %s .. %s UTC\n", utc_date(s.oldest).c_str(),
              utc_date(s.newest).c_str());
  std::printf("  graph tuner  %lld layout-transform times, graph-best records of %lld models\n",
              static_cast<long long>(s.transforms), static_cast<long long>(s.graph_best_models));
  return ok_status();
}

Status run_check(const RecordsFlags& f, bool repair) {
  if (!std::filesystem::exists(f.db)) return not_found("--db " + f.db + " does not exist");
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  if (repair) TT_RETURN_IF_ERROR(store->rebuild_best_tables());
  TT_ASSIGN_OR_RETURN(auto check, store->check_best_tables());
  if (check.mismatches == 0) {
    std::printf(
        "%s: the best-record tables agree with a full scan (%lld results in %lld groups)%s\n",
        f.db.c_str(), static_cast<long long>(check.results), static_cast<long long>(check.groups),
        repair ? ", rebuilt" : "");
    return ok_status();
  }
  for (const std::string& e : check.examples) std::printf("  %s\n", e.c_str());
  return Error{ErrorCode::kDataLoss,
               f.db + ": " + std::to_string(check.mismatches) +
                   " differences between the best-record tables and a full scan (listed above); "
                   "`tensortune records check --repair` rebuilds them"};
}

Status run_compact(const RecordsFlags& f, int keep_top, const std::string& keep_since) {
  if (keep_top < 1)
    return invalid_argument(
        "records compact needs --keep-top K (the fastest results kept per workload, target and "
        "device key); nothing was changed");
  if (!std::filesystem::exists(f.db)) return not_found("--db " + f.db + " does not exist");
  TT_ASSIGN_OR_RETURN(const double since, parse_time("--keep-since", keep_since));
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  std::fprintf(stderr, "compacting %s (one transaction, then VACUUM) ...\n", f.db.c_str());
  TT_ASSIGN_OR_RETURN(auto c, store->compact(keep_top, since));
  std::printf(
      "%s: kept %lld of %lld results (the %d fastest per workload, target and device "
      "key%s), %.1f -> %.1f MiB\n",
      f.db.c_str(), static_cast<long long>(c.before - c.deleted), static_cast<long long>(c.before),
      keep_top, keep_since.empty() ? "" : (", and all since " + keep_since).c_str(),
      double(c.bytes_before) / (1 << 20), double(c.bytes_after) / (1 << 20));
  return ok_status();
}

Status run_export(const RecordsFlags& f) {
  if (f.format != "autotvm")
    return invalid_argument("--format = '" + f.format + "' is not supported (autotvm)");
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  TT_ASSIGN_OR_RETURN(int64_t n, records::export_autotvm_log(*store, std::cout));
  std::cout.flush();
  std::fprintf(stderr, "exported %lld records from %s\n", static_cast<long long>(n), f.db.c_str());
  return ok_status();
}

Status run_import(const RecordsFlags& f) {
  std::ifstream in(f.log);
  if (!in) return not_found("cannot open log " + f.log);
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  records::ImportOptions options;
  options.device_key = f.device_key;
  options.vector_lanes = codegen::host_target().vector_lanes;
  options.skip_unsupported = f.skip_unsupported;
  auto stats = records::import_autotvm_log(*store, in, f.log, options);
  if (!stats) {
    Error e = stats.error().with_context("import failed, nothing was written");
    if (stats.error().code == ErrorCode::kUnimplemented)
      e.message +=
          " (--skip-unsupported imports the records tensortune can use and counts the rest)";
    return e;
  }
  std::string keys;
  for (const auto& k : stats->device_keys) keys += (keys.empty() ? "" : ", ") + k;
  std::printf("imported %lld records from %s (%lld lines) into %s under device key %s\n",
              static_cast<long long>(stats->imported), f.log.c_str(),
              static_cast<long long>(stats->lines), f.db.c_str(),
              keys.empty() ? "-" : keys.c_str());
  for (const auto& [name, skipped] : stats->skipped)
    std::printf("skipped %lld records of %s: %s\n", static_cast<long long>(skipped.count),
                name.c_str(), skipped.reason.c_str());
  return ok_status();
}

std::string short_workload(const records::StoredRecord& r) {
  auto task = records::task_from_workload_key(r.task.workload_key, r.task.target, 16);
  return task ? schedule_space::describe_workload(task->workload) : r.task.workload_key;
}

Status run_plot(const RecordsFlags& f) {
  const bool png = f.output.size() > 4 && f.output.substr(f.output.size() - 4) == ".png";
  const bool svg = f.output.size() > 4 && f.output.substr(f.output.size() - 4) == ".svg";
  if (!png && !svg) return invalid_argument("-o = '" + f.output + "' must end in .svg or .png");
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  TT_ASSIGN_OR_RETURN(auto all, store->all_records());
  // One curve per tuning run and task: best GFLOPS so far against the trial number.
  struct Curve {
    std::string label;
    std::vector<std::pair<double, double>> points;
    double best = 0;
    int64_t count = 0;
  };
  std::map<std::pair<std::string, std::string>, Curve> curves;
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& r : all) {
    if (r.run_id.empty() || r.tuner == "import") continue;
    const std::string workload = short_workload(r);
    if (!f.workload.empty() && workload.find(f.workload) == std::string::npos) continue;
    auto key = std::make_pair(r.run_id, r.task.workload_key);
    auto [it, inserted] = curves.try_emplace(key);
    Curve& c = it->second;
    if (inserted) {
      order.push_back(key);
      c.label = r.run_id + " | " + workload;
    }
    const double g =
        r.result.ok() && r.result.mean_cost() > 0 ? r.task.flop / r.result.mean_cost() / 1e9 : 0.0;
    c.best = std::max(c.best, g);
    ++c.count;
    const double x = r.trial >= 0 ? static_cast<double>(r.trial + 1) : static_cast<double>(c.count);
    c.points.emplace_back(x, c.best);
  }
  if (curves.empty())
    return not_found(f.db + " has no tuning runs to plot" +
                     (f.workload.empty() ? "" : " matching '" + f.workload + "'"));
  PlotSpec spec;
  spec.title = "Best GFLOPS by trial (" + f.db + ")";
  spec.x_label = "trial";
  spec.y_label = "best GFLOPS so far";
  for (const auto& key : order) {
    Curve& c = curves[key];
    std::sort(c.points.begin(), c.points.end());
    double best = 0;
    for (auto& p : c.points) p.second = best = std::max(best, p.second);
    spec.series.push_back({c.label, c.points});
  }
  const std::string text = render_svg(spec);
  const std::string svg_path = png ? f.output + ".svg.tmp" : f.output;
  {
    std::ofstream out(svg_path);
    if (!out) return unavailable("cannot write " + svg_path);
    out << text;
  }
  if (png) {
    const std::string cmd = "rsvg-convert -f png -o '" + f.output + "' '" + svg_path + "'";
    const int rc = std::system(cmd.c_str());
    std::remove(svg_path.c_str());
    if (rc != 0)
      return unavailable("converting to PNG failed (rsvg-convert from librsvg2-bin; exit " +
                         std::to_string(rc) + "); write an .svg instead");
  }
  std::printf("wrote %s: %zu curves\n", f.output.c_str(), spec.series.size());
  return ok_status();
}

}  // namespace

void add_records_command(CLI::App& app, int& exit_code) {
  CLI::App* records = app.add_subcommand("records", "Query, export and import the record DB");
  records->require_subcommand(1);
  auto flags = std::make_shared<RecordsFlags>();
  auto finish = [&exit_code](const Status& st) {
    exit_code = st.has_value() ? 0 : report_error(st.error());
  };

  CLI::App* best =
      records->add_subcommand("best", "The best record per (workload, target, device key)");
  best->add_option("--db", flags->db, "record DB")->capture_default_str();
  best->add_flag("--json", flags->json, "print JSON instead of a table");
  best->add_option("--tracker", flags->tracker,
                   "HOST:PORT: query the tracker's archive instead of --db");
  best->add_option("--token-file", flags->token_file, "with --tracker: the tracker's shared token");
  best->add_option("--tls-ca", flags->tls_ca,
                   "with --tracker: CA certificate (PEM) of the tracker");
  best->add_option("--template", flags->template_filter,
                   "only this template (conv2d_NCHWc.x86, or its op name conv2d_NCHWc)");
  best->add_option("--workload", flags->workload,
                   "only workloads with this tensor shape (1x64x56x56: data, 64x64x3x3: kernel) "
                   "or this exact workload key");
  best->add_option("--device-key", flags->device_key, "only this device key (e.g. x86-avx512)");
  best->add_option("--model", flags->model.model,
                   "only the workloads of this model's tasks (a zoo name or an .onnx file)");
  best->add_option("--input-shape", flags->model.input_shapes,
                   "with --model: NAME=1x3x224x224 for its inputs");
  best->add_option("--threads", flags->threads, "only results measured on this many threads")
      ->check(at_least(0, 1024));
  best->add_option("--since", flags->since,
                   "only results measured from then on: 2026-11-20, 2026-11-20T08:30:00 (UTC) or "
                   "unix seconds");
  best->add_option("--until", flags->until, "only results measured until then (as --since)");
  best->add_option("--top-k", flags->top_k, "the best K records of every workload, not just one")
      ->check(at_least(1, 1000))
      ->capture_default_str();
  best->add_flag("--jsonl", flags->json_lines, "print one JSON object a line (large answers)");
  best->footer(
      "\nExamples:\n  tensortune records best --db r18.db --template conv2d_NCHWc "
      "--workload 1x64x56x56\n  tensortune records best --db farm.db --model resnet-50 "
      "--device-key x86-avx512 --since 2026-11-01\n  tensortune records best --tracker "
      "farm:9190 --device-key x86-avx512 --top-k 5 --jsonl\nFiltered answers list error-free "
      "records from the best-record tables (milliseconds on millions of results); a filter that "
      "matches nothing prints nothing (a note on stderr) and exits 0.");
  best->callback([flags, finish] { finish(run_best(*flags)); });

  CLI::App* check = records->add_subcommand(
      "check", "Verify the best-record tables against a full scan of the results");
  check->add_option("--db", flags->db, "record DB")->capture_default_str();
  auto repair = std::make_shared<bool>(false);
  check->add_flag("--repair", *repair, "rebuild them from the results first");
  check->callback([flags, finish, repair] { finish(run_check(*flags, *repair)); });

  CLI::App* compact = records->add_subcommand(
      "compact", "Keep the best K results per workload (and every recent one), delete the rest");
  compact->add_option("--db", flags->db, "record DB")->capture_default_str();
  auto keep_top = std::make_shared<int>(0);
  auto keep_since = std::make_shared<std::string>();
  compact->add_option("--keep-top", *keep_top,
                      "results kept per (workload, target, device key): the fastest error-free "
                      "ones (required)");
  compact->add_option("--keep-since", *keep_since,
                      "also keep every result measured from then on (2026-11-01, a UTC time or "
                      "unix seconds)");
  compact->footer(
      "\nExample: tensortune records compact --db archive.db --keep-top 20 --keep-since "
      "2026-11-01\nDeleted results are gone: a resumed tuning run may measure their configs "
      "again. Failed results are deleted unless recent.");
  compact->callback([flags, finish, keep_top, keep_since] {
    finish(run_compact(*flags, *keep_top, *keep_since));
  });

  CLI::App* stats = records->add_subcommand(
      "stats", "What the DB holds: results, workloads, device keys, dates, size on disk");
  stats->add_option("--db", flags->db, "record DB")->capture_default_str();
  stats->add_flag("--json", flags->json, "print JSON instead of text");
  stats->callback([flags, finish] { finish(run_stats(*flags)); });

  CLI::App* exp =
      records->add_subcommand("export", "Write every record as AutoTVM JSON lines to stdout");
  exp->add_option("--db", flags->db, "record DB")->capture_default_str();
  exp->add_option("--format", flags->format, "log format (autotvm: version 0.2 JSON lines)")
      ->capture_default_str();
  exp->footer("\nExample: tensortune records export --db resnet.db --format autotvm > resnet.log");
  exp->callback([flags, finish] { finish(run_export(*flags)); });

  CLI::App* imp = records->add_subcommand(
      "import", "Add the records of an AutoTVM JSON-lines log (all or nothing)");
  imp->add_option("--db", flags->db, "record DB")->capture_default_str();
  imp->add_option("log", flags->log, "AutoTVM log file")->required();
  imp->add_option(
      "--device-key", flags->device_key,
      "device key to file the results under (default: the target's -model, else cuda-smXY "
      "from a CUDA target's -arch, else its -mcpu, e.g. skylake-avx512)");
  imp->add_flag(
      "--skip-unsupported", flags->skip_unsupported,
      "import the records tensortune can use; count the others (templates, dtypes, layouts it "
      "lacks) per template instead of refusing the log");
  imp->footer(
      "\nReads every AutoTVM version's form (split sizes with -1 or the outer factor first,\n"
      "knobs in any order, keyed targets). A malformed line stops the import with its line\n"
      "number; nothing of that log is written.\n"
      "Example: tensortune records import --db tuned.db --skip-unsupported tophub.log");
  imp->callback([flags, finish] { finish(run_import(*flags)); });

  CLI::App* plot = records->add_subcommand(
      "plot", "Plot best GFLOPS against trial number, one curve per tuning run and task");
  plot->add_option("--db", flags->db, "record DB")->capture_default_str();
  plot->add_option("-o,--output", flags->output, "output image: .svg, or .png (needs rsvg-convert)")
      ->required();
  plot->add_option("--workload", flags->workload,
                   "only workloads whose description contains this (e.g. '@56' or 'k64x3x3')");
  plot->footer(
      "\nExample: tensortune records plot --db resnet.db --workload 1x64x56x56 -o curves.png");
  plot->callback([flags, finish] { finish(run_plot(*flags)); });
}

}  // namespace tensortune::cli
