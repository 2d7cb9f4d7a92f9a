#include "cli/tuning_session.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "compiler/codegen/llvm/kernel.h"
#include "tuner/tuner_factory.h"

namespace tensortune::cli {

namespace ss = schedule_space;

void add_tuning_flags(CLI::App& cmd, TuningFlags& f) {
  cmd.add_option("--tuner", f.tuner,
                 "search strategy: grid (every valid config in index order), random (uniform, "
                 "never repeats), "
                 "ga (genetic: crossover and mutation of knob values) or xgb (an XGBoost cost "
                 "model plans each "
                 "batch with simulated annealing; the fewest trials to a good config)")
      ->check(CLI::IsMember(tuner::tuner_names()))
      ->capture_default_str();
  cmd.add_flag("--transfer", f.transfer,
               "xgb: pre-train the cost model on the DB's records of other workloads of the "
               "same template and target");
  cmd.add_option("--xgb-loss", f.xgb_loss,
                 "xgb: rank (pairwise ranking) or reg (regression on relative throughput)")
      ->check(CLI::IsMember({"rank", "reg"}))
      ->capture_default_str();
  cmd.add_option("--plan-size", f.plan_size,
                 "xgb: measurements between model refits, and configs planned per refit")
      ->check(tensortune::cli::at_least(1))
      ->capture_default_str();
  cmd.add_option("--trials", f.trials,
                 "configs this tuner and seed measure for the task in total (its earlier "
                 "results in the DB count, so rerunning a command resumes it; configs measured by "
                 "any run are skipped and taught to the tuner)")
      ->check(tensortune::cli::at_least(1))
      ->capture_default_str();
  cmd.add_option("--batch-size", f.batch_size,
                 "configs per measurement batch (progress and DB writes happen per batch)")
      ->check(tensortune::cli::at_least(1))
      ->capture_default_str();
  cmd.add_option("--early-stopping", f.early_stopping,
                 "stop after this many trials without a new best (0: never)")
      ->check(tensortune::cli::at_least(0))
      ->capture_default_str();
  cmd.add_option("--seed", f.seed,
                 "random seed of the tuner; the same seed gives the same sequence")
      ->capture_default_str();
  cmd.add_option("--gpu", f.gpu, "CUDA targets measured on this machine: the GPU (ordinal)")
      ->check(tensortune::cli::at_least(0, 1024))
      ->capture_default_str();
  cmd.add_option("--threads", f.threads,
                 "threads each kernel runs on while measured (recorded with the result)")
      ->check(tensortune::cli::at_least(1, 1024))
      ->capture_default_str();
  CLI::Option* number =
      cmd.add_option("--number", f.number,
                     "time_evaluator: runs per repeat before min-repeat-ms growth")
          ->check(tensortune::cli::at_least(1))
          ->capture_default_str();
  CLI::Option* repeat =
      cmd.add_option(
             "--repeat", f.repeat,
             "time_evaluator: timed rounds; with more than 2 the fastest and slowest are dropped")
          ->check(tensortune::cli::at_least(1))
          ->capture_default_str();
  CLI::Option* min_repeat_ms =
      cmd.add_option("--min-repeat-ms", f.min_repeat_ms,
                     "time_evaluator: grow `number` until one round lasts this long")
          ->check(tensortune::cli::at_least(0))
          ->capture_default_str();
  cmd.add_option("--timeout", f.timeout_s,
                 "seconds a config may take in all before it is recorded as RUN_TIMEOUT")
      ->check(tensortune::cli::at_least(1))
      ->capture_default_str();
  cmd.add_flag("--flush-cache", f.flush_cache,
               "measure as a network runs a layer: before every round, evict the caches and "
               "the TLB (a pass over twice the last-level cache) and flush the weights and "
               "output. Implies --number 1 --min-repeat-ms 0 --repeat 10 where those are not "
               "given, so that every timed run is a cold one (recommended for tune --model on "
               "a CPU: compile then picks Winograd or direct by what the network will see)");
  // A flushed round of many runs times one cold run and many warm ones: AutoTVM's cache flush
  // is only meaningful with number=1, and its users learn that the hard way.
  cmd.parse_complete_callback([&f, number, repeat, min_repeat_ms] {
    if (!f.flush_cache) return;
    if (number->count() == 0) f.number = 1;
    if (min_repeat_ms->count() == 0) f.min_repeat_ms = 0;
    if (repeat->count() == 0) f.repeat = 10;
  });
  cmd.add_option("--tracker", f.tracker,
                 "HOST:PORT of a tracker: measure on its device farm instead of this machine")
      ->group("Farm");
  cmd.add_option("--key", f.farm_key,
                 "with --tracker: the device key to measure on (e.g. x86-avx512)")
      ->group("Farm");
  cmd.add_option("--token-file", f.token_file,
                 "with --tracker: file holding the tracker's shared token")
      ->group("Farm");
  cmd.add_option("--tls-ca", f.tls_ca,
                 "with --tracker: CA certificate (PEM) to verify the tracker's TLS certificate")
      ->group("Farm");
  add_client_certificate_options(cmd, f.tls_cert, f.tls_key, "Farm");
  cmd.add_option("--priority", f.priority,
                 "with --tracker: job priority; higher goes first, equal ones share slots")
      ->group("Farm");
  cmd.add_option(
      "--device-key", f.device_key,
      "device key the results are recorded under (default: this host's, e.g. x86-avx512)");
}

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

Expected<TaskSummary> tune_one_task(const ss::Task& task, const TuningFlags& f,
                                    records::RecordStore* store, int task_number, int task_count,
                                    const TaskReporting& reporting) {
  TT_ASSIGN_OR_RETURN(ss::ConfigSpace space, ss::make_config_space(task));
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
    TT_ASSIGN_OR_RETURN(measurer, make_farm_measurer(task, f));
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
  TT_ASSIGN_OR_RETURN(auto tuner, tuner::make_tuner(task, space, topt, store));
  TaskSummary summary;
  summary.space_size = space.size();
  summary.valid_configs = space.valid_count();

  tuner::TuneOptions to;
  to.trials = std::min(f.trials, summary.valid_configs);
  to.batch_size = f.batch_size;
  to.early_stopping = f.early_stopping;
  to.run_id = f.tuner + "-seed" + std::to_string(f.seed);
  to.on_batch = reporting.on_batch;
  if (!reporting.quiet)
    std::printf("[Task %2d/%2d] %s %s | space %lld configs (%lld valid) | %s, %d thread%s\n",
                task_number, task_count, task.template_name.c_str(),
                ss::describe_workload(task.workload).c_str(), static_cast<long long>(space.size()),
                static_cast<long long>(summary.valid_configs), measurer->device_key().c_str(),
                f.threads, f.threads == 1 ? "" : "s");
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
  summary.best_config =
      summary.result.best_config ? space.describe(*summary.result.best_config) : "-";
  if (f.measure_default) {
    auto r = measurer->measure(space, {ss::default_config(task, space)});
    if (r) summary.default_gflops = tuner::result_gflops(task, (*r)[0]);
  }
  return summary;
}

}  // namespace tensortune::cli
