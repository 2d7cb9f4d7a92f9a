// `tensortune tune --model M`: every task of a network, one after the other (AutoTVM's
// tune_tasks), locally or on a farm, with a summary table at the end.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <set>

#include "cli/commands.h"
#include "cli/graph_tune.h"
#include "cli/model_args.h"
#include "cli/op_args.h"
#include "cli/tuning_session.h"
#include "compiler/codegen/llvm/kernel.h"
#include "records/record_store.h"
#include "tuner/task_extraction.h"

namespace tensortune::cli {
namespace {

namespace ss = schedule_space;

struct TuneModelFlags {
  ModelFlags model;
  std::string db = "tensortune.db";
  std::vector<int> only;  // 1-based task numbers
  std::string target = "llvm";
  TuningFlags tuning;
  bool graph_tune = false;
  bool no_transfer = false;
};

Status run_tune_model(const TuneModelFlags& f) {
  TT_ASSIGN_OR_RETURN(graph::Graph model, load_model(f.model));
  TT_ASSIGN_OR_RETURN(ss::Target target, op_target(f.target));
  TT_ASSIGN_OR_RETURN(auto extraction, tuner::extract_tasks(model, target));
  const std::set<int> only(f.only.begin(), f.only.end());
  for (int n : only)
    if (n < 1 || n > static_cast<int>(extraction.tasks.size()))
      return invalid_argument("--only " + std::to_string(n) + ": the model has tasks 1.." +
                              std::to_string(extraction.tasks.size()));
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  std::printf("tuning %s: %zu tasks%s, %s tuner, %lld trials each, records in %s\n",
              f.model.model.c_str(), extraction.tasks.size(), only.empty() ? "" : " (a subset)",
              f.tuning.tuner.c_str(), static_cast<long long>(f.tuning.trials), f.db.c_str());
  for (const auto& u : extraction.untunable) std::printf("not tunable: %s\n", u.c_str());
  struct Row {
    int number;
    std::string workload;
    double best;
    int64_t trials;
    double seconds;
  };
  std::vector<Row> rows;
  const int count = static_cast<int>(extraction.tasks.size());
  TuningFlags tuning = f.tuning;
  // A model's tasks share templates: xgb pre-trains on what the DB already holds of the others.
  tuning.transfer_if_available = !f.no_transfer;
  for (int i = 0; i < count; ++i) {
    if (!only.empty() && !only.count(i + 1)) continue;
    const auto& t = extraction.tasks[i];
    auto summary = tune_one_task(t.task, tuning, store.get(), i + 1, count);
    if (!summary) return summary.error().with_context("task " + std::to_string(i + 1));
    rows.push_back({i + 1, ss::describe_workload(t.task.workload),
                    summary->result.progress.best_gflops, summary->result.progress.done,
                    summary->result.progress.elapsed_s});
  }
  std::printf("\n%3s  %-52s %12s %7s %9s\n", "#", "workload", "best GFLOPS", "trials", "seconds");
  for (const Row& r : rows)
    std::printf("%3d  %-52s %12.2f %7lld %9.1f\n", r.number, r.workload.c_str(), r.best,
                static_cast<long long>(r.trials), r.seconds);
  if (f.graph_tune) {
    if (target.spec.starts_with("cuda")) {
      std::printf("\n--graph-tune: not run; graph tuning of GPU layouts is not built yet\n");
    } else {
      std::printf("\ngraph tuning %s:\n", f.model.model.c_str());
      GraphTuneFlags g;
      g.model = f.model;
      g.db = f.db;
      g.device_key = f.tuning.device_key.empty() ? f.tuning.farm_key : f.tuning.device_key;
      g.threads = f.tuning.threads;
      TT_RETURN_IF_ERROR(graph_tune(g));
      return ok_status();
    }
  }
  std::printf(
      "\nCompile-time use: `tensortune inspect --model %s --records %s` shows the tuned block "
      "sizes; `tensortune graph-tune --model %s --db %s` chooses them for the whole network.\n",
      f.model.model.c_str(), f.db.c_str(), f.model.model.c_str(), f.db.c_str());
  return ok_status();
}

}  // namespace

void add_tune_model_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<TuneModelFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Tune every task of a model (locally or on a farm with --tracker)");
  add_model_flags(cmd, flags->model, false);
  cmd->add_option("--db", flags->db, "SQLite record DB (created if missing)")
      ->capture_default_str();
  cmd->add_option("--target", flags->target,
                  "llvm (this CPU), or cuda / cuda-smXY: the CUDA templates, measured on --gpu "
                  "here or with --tracker on GPU servers (key cuda-smXY by default)")
      ->capture_default_str();
  cmd->add_option("--only", flags->only,
                  "tune only these task numbers (as `tensortune tasks` lists them)");
  add_tuning_flags(*cmd, flags->tuning);
  cmd->add_flag("--no-transfer", flags->no_transfer,
                "xgb: do not pre-train each task's cost model on the DB's records of the model's "
                "other workloads (done by default where there are some)");
  cmd->add_flag("--graph-tune", flags->graph_tune,
                "then run the graph tuner on the records (tensortune graph-tune): graph-best "
                "records that compile --records uses first");
  cmd->footer(
      "\nExamples:\n  tensortune tune --model resnet-18 --tuner xgb --trials 200 --db resnet18.db\n"
      "  tensortune tune --model model.onnx --input-shape input=1x3x224x224 --only 2 5 \\\n"
      "      --tracker farm:9190 --key x86-avx512\n"
      "  tensortune tune --model resnet-18 --target cuda-sm90 --tracker farm:9190 --tuner xgb\n"
      "Rerunning the same command resumes every task where it stopped.");
  cmd->callback([flags, &exit_code] {
    Status st = run_tune_model(*flags);
    exit_code = st.has_value() ? 0 : report_error(st.error());
  });
}

}  // namespace tensortune::cli
