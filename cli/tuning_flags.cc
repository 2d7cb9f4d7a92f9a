// The tuning options of `tune-op` and `tune --model`: tuner, trials, timing, farm.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/option_groups.h"
#include "tuner/tuner_factory.h"

namespace tensortune::cli {

void add_tuning_flags(CLI::App& cmd, workflow::TuningOptions& f, bool threads_flag) {
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
  cmd.add_flag("--whole-space", f.whole_space,
               "propose every valid config, not only the register tiles the CPU model offers "
               "(tiles its vector registers hold, with enough sums to keep its FMA pipes busy; "
               "`tune` prints the model)");
  cmd.add_option("--seed", f.seed,
                 "random seed of the tuner; the same seed gives the same sequence")
      ->capture_default_str();
  cmd.add_option("--gpu", f.gpu, "CUDA targets measured on this machine: the GPU (ordinal)")
      ->check(tensortune::cli::at_least(0, 1024))
      ->capture_default_str();
  if (threads_flag)
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
  cmd.add_option("--build-workers", f.build_workers,
                 "with --tracker: threads that build each batch's kernels here, so that the "
                 "devices only time them (default: this machine's cores for CUDA tasks, none "
                 "for CPU tasks; 0: the devices build, which a GPU server does only with "
                 "--build-on-device). Needs a credential with the builder role")
      ->check(CLI::Range(0, 1024))
      ->group("Farm");
  cmd.add_flag("--remote-build", f.remote_build,
               "with --tracker: the farm's builder servers (tensortune builder) build each "
               "batch's kernels instead of this machine (the default for CUDA tasks where this "
               "build has no NVRTC and the farm has builders)")
      ->group("Farm");
  cmd.add_option("--kernel-cache-mb", f.kernel_cache_mb,
                 "with --tracker: keep kernels built here in the record DB by content, at most "
                 "this many MiB (oldest dropped first), so no config is built twice; 0: none")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str()
      ->group("Farm");
  cmd.add_option("--priority", f.priority,
                 "with --tracker: job priority; higher goes first, equal ones share slots")
      ->group("Farm");
  cmd.add_option(
      "--device-key", f.device_key,
      "device key the results are recorded under (default: this host's, e.g. x86-avx512)");
}

}  // namespace tensortune::cli
