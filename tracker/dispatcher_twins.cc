// Twins: items identical to one in flight wait for its result instead of being measured again
// (Dispatcher's "Twins" in dispatcher.h).
#include <algorithm>

#include "tracker/dispatcher.h"

namespace tensortune::tracker {

namespace ss = schedule_space;

namespace {

// Two items are the same measurement when everything a device is sent matches but the ids,
// and a built kernel's sender and build time (its code is named by its digest, not copied
// into the key). (The messages hold no maps, so their serialization is deterministic.)
std::string twin_key_of(const std::string& device_key, v1::WorkItem work) {
  work.clear_item_id();
  work.clear_lease_id();
  if (work.has_kernel()) {
    work.mutable_kernel()->clear_code();
    work.mutable_kernel()->clear_built_by();
    work.mutable_kernel()->clear_build_s();
  }
  return device_key + '\n' + work.SerializeAsString();
}

}  // namespace

void Dispatcher::enqueue_new_locked(uint64_t item_id, Job& job) {
  Item& item = items_[item_id];
  item.twin_key = twin_key_of(job.spec.device_key, item.work);
  if (auto lead = in_flight_.find(item.twin_key); lead != in_flight_.end()) {
    item.state = Item::State::kTwin;
    items_[lead->second].twins.push_back(item_id);
    ++job.waiting_on_twins;
    return;
  }
  in_flight_[item.twin_key] = item_id;
  job.queue.push_back(item_id);
}
void Dispatcher::leave_flight_locked(uint64_t item_id, const Item& item) {
  if (auto lead = in_flight_.find(item.twin_key);
      lead != in_flight_.end() && lead->second == item_id)
    in_flight_.erase(lead);
}
void Dispatcher::release_twins_locked(uint64_t item_id) {
  Item& item = items_[item_id];
  leave_flight_locked(item_id, item);
  if (item.twins.empty()) return;
  const uint64_t heir_id = item.twins.front();
  Item& heir = items_[heir_id];
  heir.twins.assign(item.twins.begin() + 1, item.twins.end());
  item.twins.clear();
  heir.state = Item::State::kQueued;
  heir.queued_at = Clock::now();
  Job& job = jobs_[heir.job];
  --job.waiting_on_twins;
  job.queue.push_front(heir_id);  // it has waited as long as the item it replaces
  in_flight_[heir.twin_key] = heir_id;
}
std::pair<int, JobSink> Dispatcher::finish_twin_locked(uint64_t twin_id,
                                                       const ss::MeasureResult& result) {
  Item& twin = items_[twin_id];
  Job& job = jobs_[twin.job];
  --job.waiting_on_twins;
  ++job.done;
  if (!result.ok()) ++job.failed;
  std::pair<int, JobSink> told{twin.index, job.sink};
  if (job.is_finished()) mark_finished_locked(job);
  items_.erase(twin_id);
  return told;
}

}  // namespace tensortune::tracker
