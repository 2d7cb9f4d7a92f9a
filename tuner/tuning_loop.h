#pragma once
/// \file
/// The tuning loop of one task: ask the tuner for a batch, measure it, record every result,
/// update the tuner, report progress; stop at the trial budget, when the space is exhausted or
/// after `early_stopping` trials without a new best.
///
/// Resuming: with a record store, every config already measured for this task on this device
/// key (by any run) is skipped and replayed into the tuner (so a model-based tuner learns from
/// it) and seeds the best so far; the results of the same run (`run_id`, e.g. "xgb-seed0")
/// count toward the trial budget. Running the same command again after a crash therefore
/// finishes the remaining trials only, while another tuner or seed gets a budget of its own.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "records/record_store.h"
#include "schedule_space/config_space.h"
#include "schedule_space/task.h"
#include "support/error.h"
#include "tuner/measurer.h"
#include "tuner/tuner.h"

namespace tensortune::tuner {

struct TuneProgress {
  int64_t done = 0;           ///< trials measured, earlier runs included
  int64_t total = 0;          ///< the budget (capped at the number of valid configs)
  double current_gflops = 0;  ///< best of the latest batch
  double best_gflops = 0;
  double elapsed_s = 0;
  int64_t errors = 0;  ///< failed measurements in this run
};

/// Sees every batch once it is recorded: its configs and their results, in order. Returning
/// false stops the loop there (what is measured stays recorded): callbacks that stop early, a
/// Ctrl-C seen between batches.
using BatchFn = std::function<bool(const TuneProgress&, const std::vector<schedule_space::Config>&,
                                   const std::vector<schedule_space::MeasureResult>&)>;

struct TuneOptions {
  int64_t trials = 200;        ///< total configs measured for the task, earlier runs included
  int batch_size = 8;          ///< configs per measure call
  int64_t early_stopping = 0;  ///< stop after this many trials without improvement; 0 = never
  std::string run_id;          ///< names the run in the DB; its results count toward `trials`
  BatchFn on_batch;            ///< optional
  int repeat = 1;              ///< rounds each config is timed over (for timed_seconds)
};

struct TuneResult {
  TuneProgress progress;
  bool stopped = false;  ///< on_batch returned false
  std::optional<schedule_space::Config> best_config;
  int64_t resumed = 0;   ///< trials of this run found in the DB at the start
  int64_t replayed = 0;  ///< results of the task found in the DB (all runs) and given to the tuner
  int64_t measured = 0;  ///< trials measured by this run
  double measure_seconds = 0;
  /// Seconds the kernels ran while timed (MeasureResult::timed_seconds), against
  /// measure_seconds: how much of the measuring time the device spent on its real work.
  double timed_seconds = 0;
  double tuner_seconds = 0;  ///< time in the tuner's next_batch and update (model training, search)
};

using ProgressFn = std::function<void(const TuneProgress&)>;

/// `store` may be null (nothing recorded, nothing resumed).
Expected<TuneResult> tune_task(const schedule_space::Task& task,
                               const schedule_space::ConfigSpace& space, Tuner& tuner,
                               Measurer& measurer, records::RecordStore* store,
                               const TuneOptions& options, const ProgressFn& progress);

/// GFLOPS of a result (0 for errors).
double result_gflops(const schedule_space::Task& task, const schedule_space::MeasureResult& r);

}  // namespace tensortune::tuner
