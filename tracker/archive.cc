#include "tracker/archive.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tensortune::tracker {

namespace ss = schedule_space;

Expected<std::unique_ptr<Archive>> Archive::open(const std::string& path) {
  // One tracker per archive: two would dispatch the same configs and archive them twice. The
  // lock is an flock on a file beside the archive (SQLite's own locks are fcntl locks on the
  // archive, which closing any other descriptor of that file would release); the kernel drops
  // it when the tracker exits, however it exits.
  const std::string lock_path = path + ".tracker-lock";
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) return unavailable("cannot create " + lock_path + ": " + std::strerror(errno));
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd);
    return Error{ErrorCode::kFailedPrecondition,
                 "archive " + path + " is in use by another tracker (it holds " + lock_path +
                     "): one tracker per archive, or each would measure and archive the same "
                     "configs"};
  }
  auto fail = [lock_fd](Error e) {
    ::close(lock_fd);
    return e;
  };
  // A tracker starts rarely and then serves for weeks: its archive gets the whole check.
  auto store = records::RecordStore::open(path, records::RecordStore::Check::kAlways);
  if (!store) return fail(store.error());
  auto reader = records::RecordStore::open(path, records::RecordStore::Check::kNone);
  if (!reader) return fail(reader.error());
  auto archive = std::unique_ptr<Archive>(new Archive(std::move(*store), std::move(*reader)));
  archive->lock_fd_ = lock_fd;
  return archive;
}

Archive::~Archive() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Expected<int64_t> Archive::task_id(const ss::Task& task, const ss::ConfigSpace& space) {
  std::lock_guard<std::mutex> lock(mu_);
  return store_->ensure_task(records::task_info(task, space));
}

Expected<std::map<int64_t, ss::MeasureResult>> Archive::recorded(int64_t task_id,
                                                                 const std::string& device_key,
                                                                 int threads) {
  std::lock_guard<std::mutex> lock(mu_);
  TT_ASSIGN_OR_RETURN(auto rows, store_->task_records(task_id, device_key, threads));
  std::map<int64_t, ss::MeasureResult> out;
  for (auto& r : rows) out[r.config_index] = std::move(r.result);
  return out;
}

Status Archive::record_batch(const std::vector<Row>& rows) {
  std::lock_guard<std::mutex> lock(mu_);
  return store_->transaction([&]() -> Status {
    for (const Row& r : rows)
      TT_RETURN_IF_ERROR(
          store_->add_results(r.task_id, *r.space, {r.config}, {r.result}, r.run, {-1}));
    return ok_status();
  });
}

Expected<std::vector<records::BestRecord>> Archive::best_all() {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->best_all();
}

Expected<std::vector<records::BestRecord>> Archive::query_best(
    const records::RecordStore::BestQuery& q) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->query_best(q);
}

Expected<std::vector<records::RecordStore::TaskProgress>> Archive::recent_progress(int groups) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->recent_progress(groups);
}

Expected<int64_t> Archive::result_count() {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->result_count();
}

}  // namespace tensortune::tracker
