#include "workflow/tuning_session.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "compiler/codegen/llvm/kernel.h"
#include "tuner/index_tuners.h"
#include "tuner/tuner_factory.h"
#include "workflow/op_task.h"

namespace tensortune::workflow {

namespace ss = schedule_space;

namespace {

void print_progress(int task_number, int task_count, const tuner::TuneProgress& p, bool final,
                    bool line_per_batch) {
  static const bool terminal = isatty(STDOUT_FILENO);
  const bool tty = terminal && !line_per_batch;
  if (final && line_per_batch) {  // the last batch's line is already out
    std::printf("[Task %2d/%2d] Done. Best: %.2f GFLOPS | %lld trials | %.2f s\n", task_number,
                task_count, p.best_gflops, static_cast<long long>(p.done), p.elapsed_s);
    std::fflush(stdout);
    return;
  }
  std::printf(
      "%s[Task %2d/%2d] Current/Best: %7.2f/%7.2f GFLOPS | Progress: (%lld/%lld) | %.2f s%s",
      tty ? "\r" : "", task_number, task_count, p.current_gflops, p.best_gflops,
      static_cast<long long>(p.done), static_cast<long long>(p.total), p.elapsed_s,
      final ? (tty ? " Done.\n" : " Done.\n") : (tty ? "" : "\n"));
  std::fflush(stdout);
}

}  // namespace

Expected<std::vector<int>> parse_thread_counts(const std::string& text, int cores) {
  std::set<int> counts;
  if (text == "all") {
    for (int t = 1; t < cores; t *= 2) counts.insert(t);
    counts.insert(std::max(cores, 1));
    return std::vector<int>(counts.begin(), counts.end());
  }
  const std::string hint = " (give N, a list N,M,... or all)";
  if (text.empty()) return invalid_argument("--threads = ''" + hint);
  auto values = parse_int_list(text, "--threads");
  if (!values) return invalid_argument(values.error().message + hint);
  for (int64_t v : *values) {
    if (v < 1 || v > 1024)
      return invalid_argument("--threads = '" + text + "': " + std::to_string(v) +
                              " is not a thread count in 1..1024");
    counts.insert(static_cast<int>(v));
  }
  return std::vector<int>(counts.begin(), counts.end());
}

Expected<TaskSummary> tune_one_task(const ss::Task& task, const TuningOptions& f,
                                    records::RecordStore* store, int task_number, int task_count,
                                    const TaskReporting& reporting) {
  TT_ASSIGN_OR_RETURN(ss::ConfigSpace space, ss::make_config_space(task));
  if (f.whole_space) space = space.whole();
  measure::MeasureOptions mo;
  mo.timing.number = f.number;
  mo.timing.repeat = f.repeat;
  mo.timing.min_repeat_ms = f.min_repeat_ms;
  mo.timing.timeout_s = f.timeout_s;
  mo.threads = f.threads;
  mo.flush_cache = f.flush_cache;
  mo.device_key = f.device_key;
  mo.gpu = f.gpu;
  std::unique_ptr<tuner::Measurer> measurer;
  if (!f.tracker.empty()) {
    TT_ASSIGN_OR_RETURN(measurer, make_farm_measurer(task, f, store));
  } else {
    TT_ASSIGN_OR_RETURN(auto local, measure::make_measurer(task, mo));
    measurer = std::make_unique<tuner::LocalMeasurerAdapter>(std::move(local));
  }

  tuner::TunerOptions topt;
  topt.name = f.tuner;
  topt.seed = f.seed;
  topt.plan_size = f.plan_size;
  topt.xgb_loss = f.xgb_loss;
  topt.transfer = f.transfer;
  topt.transfer_if_available = f.transfer_if_available && f.tuner == "xgb";
  topt.threads = f.threads;
  topt.device_key = measurer->device_key();
  std::unique_ptr<tuner::Tuner> tuner;
  if (!f.configs.empty()) {
    tuner = std::make_unique<tuner::ListTuner>(space, f.configs);
  } else {
    TT_ASSIGN_OR_RETURN(tuner, tuner::make_tuner(task, space, topt, store));
  }
  TaskSummary summary;
  summary.space_size = space.size();
  summary.valid_configs = space.valid_count();
  summary.offered_configs = space.offered_count();

  tuner::TuneOptions to;
  to.trials = std::min(f.trials, f.configs.empty() ? summary.offered_configs
                                                   : static_cast<int64_t>(f.configs.size()));
  to.batch_size = f.batch_size;
  to.early_stopping = f.configs.empty() ? f.early_stopping : 0;
  to.run_id =
      f.configs.empty() ? f.tuner + "-seed" + std::to_string(f.seed) : "list-" + f.list_name;
  to.on_batch = reporting.on_batch;
  to.repeat = f.repeat;
  if (!reporting.quiet)
    std::printf(
        "[Task %2d/%2d] %s %s | space %lld configs (%lld valid, %lld offered) | %s, %d thread%s\n",
        task_number, task_count, task.template_name.c_str(),
        ss::describe_workload(task.workload).c_str(), static_cast<long long>(space.size()),
        static_cast<long long>(summary.valid_configs),
        static_cast<long long>(summary.offered_configs), measurer->device_key().c_str(), f.threads,
        f.threads == 1 ? "" : "s");
  TT_ASSIGN_OR_RETURN(summary.result, tuner::tune_task(task, space, *tuner, *measurer, store, to,
                                                       [&](const tuner::TuneProgress& p) {
                                                         if (!reporting.quiet)
                                                           print_progress(task_number, task_count,
                                                                          p, false,
                                                                          reporting.line_per_batch);
                                                         if (reporting.on_progress)
                                                           reporting.on_progress(p);
                                                       }));
  if (!reporting.quiet && (summary.result.resumed > 0 || summary.result.replayed > 0))
    std::printf(
        "[Task %2d/%2d] resumed: %lld trials of run %s were already in the DB; the tuner also "
        "learned from "
        "%lld measured configs of the task\n",
        task_number, task_count, static_cast<long long>(summary.result.resumed), to.run_id.c_str(),
        static_cast<long long>(summary.result.replayed));
  if (!reporting.quiet)
    print_progress(task_number, task_count, summary.result.progress, true,
                   reporting.line_per_batch);
  if (!reporting.quiet && summary.result.measured > 0 && summary.result.measure_seconds > 0)
    // The figure that says whether the devices did their real work or waited (for compiles,
    // the tracker, this client's tuner): kernel time over the time this run spent measuring.
    std::printf(
        "[Task %2d/%2d] timing: kernels ran %.1f s while timed, %.0f%% of the %.1f s spent "
        "measuring (%.1f s in the tuner)\n",
        task_number, task_count, summary.result.timed_seconds,
        100 * summary.result.timed_seconds / summary.result.measure_seconds,
        summary.result.measure_seconds, summary.result.tuner_seconds);
  summary.best_config =
      summary.result.best_config ? space.describe(*summary.result.best_config) : "-";
  if (f.measure_default) {
    auto r = measurer->measure(space, {ss::default_config(task, space)});
    if (r) summary.default_gflops = tuner::result_gflops(task, (*r)[0]);
  }
  return summary;
}

}  // namespace tensortune::workflow
