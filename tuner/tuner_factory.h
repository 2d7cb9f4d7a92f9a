#pragma once
/// \file
/// Building a tuner by name, so that every front end (tune-op, whole-model tuning, benchmarks)
/// offers the same choices: grid, random, ga, xgb.

#include <memory>
#include <string>
#include <vector>

#include "records/record_store.h"
#include "schedule_space/config_space.h"
#include "schedule_space/task.h"
#include "support/error.h"
#include "tuner/tuner.h"

namespace tensortune::tuner {

struct TunerOptions {
  std::string name = "random";  ///< grid, random, ga, xgb
  uint64_t seed = 0;
  int plan_size = 64;             ///< xgb
  std::string xgb_loss = "rank";  ///< xgb: rank or reg
  int pop_size = 100;             ///< ga
  /// xgb: pre-train on the records of other workloads of the same template and target, and on
  /// the task's own records at thread counts other than `threads`.
  bool transfer = false;
  /// xgb: the same where the DB has such records, nothing (and no error) where it has none:
  /// what `tune --model` does for a model's tasks by default.
  bool transfer_if_available = false;
  /// The thread count the task is tuned for (0: not known; then none of its own records count
  /// as transfer data).
  int threads = 0;
  /// The device key the task is measured on: only that key's records are transfer data (another
  /// machine kind's configs rank differently, and its vector lanes may not be ours). Empty: all.
  std::string device_key;
};

const std::vector<std::string>& tuner_names();

/// `store` is read only for transfer learning (may be null otherwise). Errors name the option.
/// The task and space must outlive the tuner.
Expected<std::unique_ptr<Tuner>> make_tuner(const schedule_space::Task& task,
                                            const schedule_space::ConfigSpace& space,
                                            const TunerOptions& options,
                                            records::RecordStore* store);

/// Records of the task's template and target that tell its cost model something before it
/// measures: other workloads' at any thread count, and the task's own at thread counts other
/// than `threads` (a kernel's good configs on one thread are mostly good on two: what tuning a
/// model for several counts shares; 0: none of its own). Features are computed in each
/// workload's own space; labels are throughput / the best of that (workload, thread count)
/// group, failed configs 0.
struct TransferSet {
  std::vector<std::vector<float>> features;
  std::vector<float> labels;
  int workloads = 0;  ///< groups: other workloads, and this one at other thread counts
};
Expected<TransferSet> load_transfer_samples(records::RecordStore& store,
                                            const schedule_space::Task& task, int threads = 0,
                                            const std::string& device_key = "");

}  // namespace tensortune::tuner
