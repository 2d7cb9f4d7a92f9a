#include "tracker/archive_writer.h"

#include <chrono>

#include "support/log.h"
#include "support/stopwatch.h"

namespace tensortune::tracker {

ArchiveWriter::ArchiveWriter(Archive& archive, TrackerMetrics* metrics)
    : archive_(archive), metrics_(metrics), thread_([this] { loop(); }) {}

ArchiveWriter::~ArchiveWriter() { stop(); }

void ArchiveWriter::add(Entry entry) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(entry));
  }
  wake_.notify_one();
}

void ArchiveWriter::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ArchiveWriter::loop() {
  std::vector<Entry> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything is handed over
      const size_t n = std::min(queue_.size(), kMaxBatch);
      batch.assign(std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(n)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    std::vector<Archive::Row> rows;
    rows.reserve(batch.size());
    for (const Entry& e : batch)
      if (e.row.task_id >= 0) rows.push_back(e.row);
    if (!rows.empty()) {
      const Stopwatch start;
      Status s = archive_.record_batch(rows);
      const double seconds = start.seconds();
      if (metrics_) metrics_->archive_write(seconds, s.has_value(), rows.size());
      if (!s) {
        // The results still reach their jobs (the client's own DB records them); the archive
        // lacks them, which the log says once per batch.
        logger("tracker")->error(
            "archive write of {} results failed (first: job '{}' index {}): {}", rows.size(),
            batch.front().job, batch.front().index, s.error().message);
      }
    }
    for (Entry& e : batch)
      if (e.then) e.then();
    batch.clear();
  }
}

}  // namespace tensortune::tracker
