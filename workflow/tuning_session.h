#pragma once
/// \file
/// Tuning one task (`tune-op`, each task of `tune --model`, Python's Task.tune): builds the
/// measurer (local or a farm's) and the tuner from the options,
/// runs the loop with AutoTVM's progress line
///   [Task 1/3] Current/Best: 12.3/45.6 GFLOPS | Progress: (64/200) | 12.4 s
/// and returns the summary for tables.

#include <cstdint>
#include <string>

#include "compiler/measure/local_measurer.h"
#include "records/record_store.h"
#include "schedule_space/task.h"
#include "tuner/tuning_loop.h"

namespace tensortune::workflow {

struct TuningOptions {
  std::string tuner = "random";
  bool transfer = false;
  /// xgb: transfer where the DB has related records (tune --model's default; --no-transfer).
  bool transfer_if_available = false;
  std::string xgb_loss = "rank";
  int plan_size = 64;
  int64_t trials = 200;
  int batch_size = 8;
  int64_t early_stopping = 0;
  uint64_t seed = 0;
  /// Propose every valid config, not only the register tiles the CPU model suits.
  bool whole_space = false;
  int threads = 1;
  int gpu = 0;  ///< CUDA templates measured here: the GPU ordinal
  int64_t number = schedule_space::kDefaultNumber;
  int repeat = schedule_space::kDefaultRepeat;
  double min_repeat_ms = schedule_space::kDefaultMinRepeatMs;
  double timeout_s = 10;
  bool flush_cache = false;
  std::string device_key;
  /// Farm: measure through a tracker instead of in this process.
  std::string tracker, farm_key, token_file, tls_ca, tls_cert, tls_key;
  int priority = 0;
  /// Farm: threads that build each batch's kernels here before it is sent, so that devices
  /// only time them (a GPU server's GPUs never wait for NVRTC). -1: this machine's cores for
  /// CUDA tasks (where this build has NVRTC), none for CPU tasks (a CPU server loads shipped
  /// object code only with --accept-built-code); 0: the devices build.
  int build_workers = -1;
  /// Farm: have the tracker's builder servers (`tensortune builder`) build the kernels instead
  /// of this machine (the default where this build cannot compile a CUDA task's kernels and
  /// the farm has builders).
  bool remote_build = false;
  /// Kernels built here are kept in the record DB by content (at most this many MiB, the
  /// oldest dropped first), so no config is built twice for a device kind; 0: no cache.
  int kernel_cache_mb = 256;
  /// Also measure the template's default (AutoTVM fallback) config, for a speedup column.
  bool measure_default = false;
  /// Measure exactly these configs (indices, those not yet in the DB, in order) instead of
  /// searching with `tuner`: a run named "list-" + list_name.
  std::vector<int64_t> configs;
  std::string list_name;
};

/// The thread counts of `tune --model --threads`: "N", a list "N,M,..." or "all" (1, the powers
/// of two below `cores`, and `cores`): ascending, each once. An error names the value.
Expected<std::vector<int>> parse_thread_counts(const std::string& text, int cores);

/// The device key a task is measured on through the tracker: --key, or for a CUDA task without
/// one its target's "cuda-smXY" (what GPU servers register as); empty when there is none.
std::string farm_device_key(const schedule_space::Task& task, const TuningOptions& flags);

/// The threads that build a task's kernels here for the farm (TuningOptions::build_workers
/// resolved; 0: the devices build). An explicit count this build cannot honour (no NVRTC for
/// a CUDA task) is an error naming why; the default then warns once and lets devices build.
Expected<int> farm_build_workers(const schedule_space::Task& task, const TuningOptions& flags);

/// A Measurer that submits every batch to the tracker as one job (farm_measurer.cc), with the
/// batch's kernels built here first when farm_build_workers says so.
Expected<std::unique_ptr<tuner::Measurer>> make_farm_measurer(const schedule_space::Task& task,
                                                              const TuningOptions& flags,
                                                              records::RecordStore* store);

struct TaskSummary {
  tuner::TuneResult result;
  std::string best_config;  ///< described, or "-" when nothing succeeded
  int64_t space_size = 0;
  int64_t valid_configs = 0;
  /// Valid configs the tuners propose on the task's CPU (ConfigSpace::offered_count).
  int64_t offered_configs = 0;
  double default_gflops = 0;  ///< with measure_default; 0 when it failed or was not asked for
};

/// How a task reports while it runs. Alone on a terminal its progress line rewrites itself;
/// beside other tasks (`line_per_batch`) every batch prints a line of its own, and
/// `on_progress` (optional) sees each batch's progress, e.g. for a total ETA.
struct TaskReporting {
  bool line_per_batch = false;
  tuner::ProgressFn on_progress;
  /// Nothing printed (the Python module reports through its callbacks).
  bool quiet = false;
  /// Sees each recorded batch; returning false stops the task there (tuning_loop.h).
  tuner::BatchFn on_batch;
};

Expected<TaskSummary> tune_one_task(const schedule_space::Task& task, const TuningOptions& flags,
                                    records::RecordStore* store, int task_number, int task_count,
                                    const TaskReporting& reporting = {});

}  // namespace tensortune::workflow
