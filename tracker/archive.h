#pragma once
/// \file
/// The tracker's record archive: a RecordStore behind a mutex (SQLite connections are
/// per-thread; the tracker's writers are many stream threads), plus the look-ups a job needs.
/// Queries for clients and the dashboard (best records, counts, curves) go through a second
/// connection with its own mutex: WAL lets them read while results are written, so a large
/// query never holds up the archiving of results.
#include <map>
#include <memory>
#include <mutex>

#include "records/record_store.h"

namespace tensortune::tracker {

class Archive {
 public:
  /// Opens the archive for this tracker alone (kFailedPrecondition while another tracker has
  /// it); a damaged file is refused as RecordStore::open refuses it.
  static Expected<std::unique_ptr<Archive>> open(const std::string& path);
  ~Archive();

  Expected<int64_t> task_id(const schedule_space::Task& task,
                            const schedule_space::ConfigSpace& space);
  /// The latest stored result per config index of the task on the device key, measured on
  /// `threads` threads (a result on another thread count does not answer the job).
  Expected<std::map<int64_t, schedule_space::MeasureResult>> recorded(int64_t task_id,
                                                                      const std::string& device_key,
                                                                      int threads);
  /// One result to store: the config of the task's space it measured, and its run (tuner
  /// "farm", the job's name as run id, and who submitted and measured it).
  struct Row {
    int64_t task_id = -1;
    std::shared_ptr<const schedule_space::ConfigSpace> space;
    schedule_space::Config config;
    schedule_space::MeasureResult result;
    records::RunInfo run;
  };
  /// Every row in one transaction: all stored, or none (the error says why).
  Status record_batch(const std::vector<Row>& rows);
  Expected<std::vector<records::BestRecord>> best_all();
  Expected<std::vector<records::BestRecord>> query_best(const records::RecordStore::BestQuery& q);
  Expected<int64_t> result_count();
  Expected<std::vector<records::RecordStore::TaskProgress>> recent_progress(int groups);

 private:
  Archive(std::unique_ptr<records::RecordStore> store, std::unique_ptr<records::RecordStore> reader)
      : store_(std::move(store)), reader_(std::move(reader)) {}
  std::mutex mu_;
  std::unique_ptr<records::RecordStore> store_;  ///< guarded by mu_: writes and job look-ups
  std::mutex read_mu_;
  std::unique_ptr<records::RecordStore> reader_;  ///< guarded by read_mu_: queries
  int lock_fd_ = -1;  ///< the flock that makes this tracker the archive's only one
};

}  // namespace tensortune::tracker
