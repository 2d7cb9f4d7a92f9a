// `tensortune records best|export|import`.
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "compiler/kernel.h"
#include "records/autotvm_log.h"
#include "records/record_store.h"

namespace tensortune::cli {

namespace {

struct RecordsFlags {
  std::string db = "tensortune.db";
  bool json = false;
  std::string format = "autotvm";
  std::string log;
  std::string device_key;
};

Status run_best(const RecordsFlags& f) {
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  TT_ASSIGN_OR_RETURN(auto best, store->best_all());
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
                     {"mean_cost_s", r.result.ok() ? nlohmann::json(r.result.mean_cost()) : nlohmann::json(nullptr)},
                     {"config_index", r.config_index},
                     {"entity", nlohmann::json::parse(r.entity_json)},
                     {"threads", r.result.threads},
                     {"measured", b.measured}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return ok_status();
  }
  if (best.empty()) {
    std::printf("%s has no records yet\n", f.db.c_str());
    return ok_status();
  }
  std::printf("%-17s %-50s %-11s %9s %9s %7s  %s\n", "template", "workload", "device", "GFLOPS", "mean ms", "trials",
              "best config");
  for (const auto& b : best) {
    const auto& r = b.record;
    auto task = records::task_from_workload_key(r.task.workload_key, r.task.target, 16);
    const std::string workload = task ? schedule_space::describe_workload(task->workload) : r.task.workload_key;
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
      std::printf("%-17s %-50s %-11s %9.2f %9.4f %7lld  %s\n", r.task.template_name.c_str(), workload.c_str(),
                  r.result.device_key.c_str(), b.gflops, r.result.mean_cost() * 1e3, static_cast<long long>(b.measured),
                  config.c_str());
    } else {
      std::printf("%-17s %-50s %-11s %9s %9s %7lld  %s\n", r.task.template_name.c_str(), workload.c_str(),
                  r.result.device_key.c_str(), "-", "all fail", static_cast<long long>(b.measured), "-");
    }
  }
  return ok_status();
}

Status run_export(const RecordsFlags& f) {
  if (f.format != "autotvm") return invalid_argument("--format = '" + f.format + "' is not supported (autotvm)");
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
  const std::string key = f.device_key.empty() ? compiler::host_device_key() : f.device_key;
  auto stats = records::import_autotvm_log(*store, in, f.log, key, compiler::host_target().vector_lanes);
  if (!stats) return stats.error().with_context("import failed, nothing was written");
  std::printf("imported %lld records from %s (%lld lines) into %s under device key %s\n",
              static_cast<long long>(stats->imported), f.log.c_str(), static_cast<long long>(stats->lines),
              f.db.c_str(), key.c_str());
  return ok_status();
}

}  // namespace

void add_records_command(CLI::App& app, int& exit_code) {
  CLI::App* records = app.add_subcommand("records", "Query, export and import the record DB");
  records->require_subcommand(1);
  auto flags = std::make_shared<RecordsFlags>();
  auto finish = [&exit_code](const Status& st) { exit_code = st.has_value() ? 0 : report_error(st.error()); };

  CLI::App* best = records->add_subcommand("best", "The best record per (workload, target, device key)");
  best->add_option("--db", flags->db, "record DB")->capture_default_str();
  best->add_flag("--json", flags->json, "print JSON instead of a table");
  best->callback([flags, finish] { finish(run_best(*flags)); });

  CLI::App* exp = records->add_subcommand("export", "Write every record as AutoTVM JSON lines to stdout");
  exp->add_option("--db", flags->db, "record DB")->capture_default_str();
  exp->add_option("--format", flags->format, "log format (autotvm: version 0.2 JSON lines)")->capture_default_str();
  exp->footer("\nExample: tensortune records export --db resnet.db --format autotvm > resnet.log");
  exp->callback([flags, finish] { finish(run_export(*flags)); });

  CLI::App* imp = records->add_subcommand("import", "Add the records of an AutoTVM JSON-lines log (all or nothing)");
  imp->add_option("--db", flags->db, "record DB")->capture_default_str();
  imp->add_option("log", flags->log, "AutoTVM log file")->required();
  imp->add_option("--device-key", flags->device_key, "device key to file the results under (default: this host's)");
  imp->footer("\nA malformed line stops the import with its line number; nothing of that log is written.");
  imp->callback([flags, finish] { finish(run_import(*flags)); });
}

}  // namespace tensortune::cli
