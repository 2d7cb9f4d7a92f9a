#include "tracker/archive.h"

namespace tensortune::tracker {

namespace ss = schedule_space;

Expected<std::unique_ptr<Archive>> Archive::open(const std::string& path) {
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(path));
  TT_ASSIGN_OR_RETURN(auto reader, records::RecordStore::open(path));
  return std::unique_ptr<Archive>(new Archive(std::move(store), std::move(reader)));
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
