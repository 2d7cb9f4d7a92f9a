// `tensortune records best|export|import`.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/svg_plot.h"
#include "compiler/codegen/llvm/kernel.h"
#include "proto/rpc_channel.h"
#include "records/autotvm_log.h"
#include "records/record_store.h"
#include "tracker/tracker_client.h"

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
  std::string format = "autotvm";
  bool skip_unsupported = false;
  std::string log;
  std::string device_key;
  std::string tracker, token_file, tls_ca;
};

// The tracker archive's best records, in the record store's shape.
Expected<std::vector<records::BestRecord>> tracker_best(const RecordsFlags& f) {
  TT_ASSIGN_OR_RETURN(auto e, wire::tracker_endpoint(f.tracker, f.token_file, f.tls_ca));
  TT_ASSIGN_OR_RETURN(auto client, tracker::TrackerClient::connect(e));
  TT_ASSIGN_OR_RETURN(auto reply, client->best_records(f.device_key));
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
    b.gflops = r.gflops();
    b.measured = r.measured();
    out.push_back(std::move(b));
  }
  return out;
}

Status run_best(const RecordsFlags& f) {
  std::vector<records::BestRecord> best;
  if (!f.tracker.empty()) {
    TT_ASSIGN_OR_RETURN(best, tracker_best(f));
  } else {
    TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
    TT_ASSIGN_OR_RETURN(best, store->best_all());
  }
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& b : best) {
      const auto& r = b.record;
      out.push_back({{"workload_key", r.task.workload_key},
                     {"template", r.task.template_name},
                     {"target", r.task.target},
                     {"device_key", r.result.device_key},
                     {"ok", r.result.ok()},
                     {"gflops", b.gflops},
                     {"mean_cost_s", r.result.ok() ? nlohmann::json(r.result.mean_cost())
                                                   : nlohmann::json(nullptr)},
                     {"config_index", r.config_index},
                     {"entity", entity_or_text(r.entity_json)},
                     {"threads", r.result.threads},
                     {"measured", b.measured}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return ok_status();
  }
  if (best.empty()) {
    std::printf("%s has no records yet\n", f.tracker.empty() ? f.db.c_str() : f.tracker.c_str());
    return ok_status();
  }
  std::printf("%-17s %-50s %-11s %9s %9s %7s  %s\n", "template", "workload", "device", "GFLOPS",
              "mean ms", "trials", "best config");
  for (const auto& b : best) {
    const auto& r = b.record;
    auto task = records::task_from_workload_key(r.task.workload_key, r.task.target, 16);
    const std::string workload =
        task ? schedule_space::describe_workload(task->workload) : r.task.workload_key;
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
  best->callback([flags, finish] { finish(run_best(*flags)); });

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
