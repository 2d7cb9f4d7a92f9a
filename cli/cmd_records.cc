// `tensortune records`: export, import and plot, and the registration of every subcommand
// (records_commands.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/records_commands.h"
#include "cli/svg_plot.h"
#include "compiler/codegen/llvm/kernel.h"
#include "records/autotvm_log.h"
#include "records/record_store.h"

namespace tensortune::cli {

namespace {

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
    const std::string workload = workflow::described_workload(r);
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
  add_client_certificate_options(*best, flags->tls_cert, flags->tls_key);
  best->add_option("--exclude-device", flags->exclude_devices,
                   "ignore results measured by this farm device (its name in `status`, e.g. "
                   "box1/host:1234); repeatable. For a device found lying after the fact")
      ->delimiter(',');
  best->add_option(
      "--template", flags->template_filter,
      "only this template (its name as records store it, or its op name: the name without "
      "its target suffix)");
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
