// `tensortune demo`: what scripts/demo.sh runs.
#include <algorithm>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/tuning_session.h"
#include "compiler/kernel.h"
#include "records/record_store.h"
#include "tuner/resnet18_workloads.h"

namespace tensortune::cli {

namespace ss = schedule_space;

namespace {

struct DemoFlags {
  std::string db = "tensortune-demo.db";
  TuningFlags tuning;
};

Status run_demo(DemoFlags f) {
  const ss::Target target = compiler::host_target();
  // A handful of ResNet-18 layers: one per stage, a strided 1x1, and the classifier.
  const std::vector<std::string> picks = {"conv 3x3 64->64 @56", "conv 1x1/2 64->128 @56", "conv 3x3 128->128 @28",
                                          "conv 3x3 256->256 @14", "conv 3x3 512->512 @7", "dense 1x512 -> 1000"};
  std::vector<tuner::NamedTask> layers;
  for (const auto& t : tuner::resnet18_workloads())
    if (std::find(picks.begin(), picks.end(), t.name) != picks.end()) layers.push_back(t);
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  std::printf("tensortune demo: tuning %zu ResNet-18 layers on this machine (%s, %s), %s tuner, %lld trials each, "
              "records in %s\n\n",
              layers.size(), target.spec.c_str(), compiler::host_device_key().c_str(), f.tuning.tuner.c_str(),
              static_cast<long long>(f.tuning.trials), f.db.c_str());
  struct Row {
    std::string name;
    double best, fallback;
    int64_t trials;
  };
  std::vector<Row> rows;
  int number = 1;
  for (const tuner::NamedTask& l : layers) {
    TT_ASSIGN_OR_RETURN(ss::Task task, ss::make_task(l.template_name, l.workload, target));
    TT_ASSIGN_OR_RETURN(auto summary, tune_one_task(task, f.tuning, store.get(), number++, static_cast<int>(layers.size())));
    rows.push_back({l.name, summary.result.progress.best_gflops, summary.default_gflops, summary.result.progress.done});
  }
  std::printf("\n%-26s %12s %15s %8s %8s\n", "layer", "best GFLOPS", "default GFLOPS", "speedup", "trials");
  for (const Row& r : rows)
    std::printf("%-26s %12.2f %15.2f %7.2fx %8lld\n", r.name.c_str(), r.best, r.fallback,
                r.fallback > 0 ? r.best / r.fallback : 0.0, static_cast<long long>(r.trials));
  std::printf("(default = the template's untuned fallback config, AutoTVM's rule; single-thread GFLOPS)\n");
  std::printf("\nNext: `tensortune records best --db %s` lists the best configs; rerun with a larger --trials to "
              "continue tuning from where this run stopped.\n",
              f.db.c_str());
  return ok_status();
}

}  // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<DemoFlags>();
  flags->tuning.trials = 24;
  flags->tuning.tuner = "xgb";  // the fewest trials to a good config; 24 random trials often miss
  flags->tuning.min_repeat_ms = 50;
  flags->tuning.measure_default = true;
  CLI::App* cmd = app.add_subcommand("demo", "Tune a few ResNet-18 layers and a dense layer on this machine and print a table");
  cmd->add_option("--db", flags->db, "SQLite record DB in the working folder")->capture_default_str();
  add_tuning_flags(*cmd, flags->tuning);
  cmd->callback([flags, &exit_code] {
    Status st = run_demo(*flags);
    exit_code = st.has_value() ? 0 : report_error(st.error());
  });
}

}  // namespace tensortune::cli
