#pragma once
/// \file
/// Private to tracker/: results reach the archive through one writer thread that commits them
/// in batches (one SQLite transaction for whatever has queued up, up to kMaxBatch), and only
/// then hands each to its job (`then`, the job's sink, in the order they came). Exactly-once is
/// kept: a client sees a result only after the transaction holding it committed, so a tracker
/// that dies loses only results nobody was told about, and the client's resubmission measures
/// them again. The device streams that complete items never wait on SQLite.
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tracker/archive.h"
#include "tracker/metrics.h"

namespace tensortune::tracker {

class ArchiveWriter {
 public:
  struct Entry {
    Archive::Row row;  ///< task_id < 0: nothing to store, only `then`
    std::function<void()> then;
    std::string job;  ///< for the error log
    int index = 0;
  };
  static constexpr size_t kMaxBatch = 2048;

  /// `metrics` may be null; both must outlive the writer.
  ArchiveWriter(Archive& archive, TrackerMetrics* metrics);
  /// Commits what is queued, then stops.
  ~ArchiveWriter();
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;

  void add(Entry entry);
  /// Commits and hands over what is queued, then stops the thread (idempotent).
  void stop();

 private:
  void loop();

  Archive& archive_;
  TrackerMetrics* metrics_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Entry> queue_;  // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  std::thread thread_;
};

}  // namespace tensortune::tracker
