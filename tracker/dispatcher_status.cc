// What the dispatcher reports: devices, queues per key, jobs.
#include <algorithm>

#include "tracker/dispatcher.h"

namespace tensortune::tracker {

v1::StatusReply Dispatcher::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Clock::now();
  v1::StatusReply reply;
  std::map<std::string, v1::QueueStatus> queues;
  for (const auto& [id, d] : devices_) {
    auto* s = reply.add_devices();
    s->set_device_id(id);
    s->set_device_key(d.key);
    s->set_name(d.name);
    s->set_slots(d.slots);
    s->set_busy(d.busy);
    s->set_last_heartbeat_age_s(seconds_between(d.last_seen, now));
    s->set_hardware(d.hardware);
    s->set_timing_fraction(d.timing_fraction);
    auto& q = queues[d.key];
    q.set_device_key(d.key);
    q.set_devices(q.devices() + 1);
    q.set_slots(q.slots() + d.slots);
    q.set_free_slots(q.free_slots() + std::max(0, d.slots - d.busy));  // prefetched: busy > slots
  }
  for (const auto& [id, job] : jobs_) {
    auto& q = queues[job.spec.device_key];
    q.set_device_key(job.spec.device_key);
    q.set_queued(q.queued() + static_cast<int>(job.queue.size()));
    q.set_running(q.running() + job.running);
    auto* j = reply.add_jobs();
    j->set_job_id(id);
    j->set_name(job.spec.name);
    j->set_client(job.spec.client);
    j->set_device_key(job.spec.device_key);
    j->set_priority(job.spec.priority);
    j->set_total(job.total);
    j->set_queued(static_cast<int>(job.queue.size()) + job.waiting_on_twins);
    j->set_running(job.running);
    j->set_done(job.done);
    j->set_failed(job.failed);
    j->set_age_s(seconds_between(job.created, now));
    j->set_finished(job.is_finished());
    if (job.is_finished()) j->set_finished_age_s(seconds_between(job.finished, now));
  }
  for (auto& [key, q] : queues) *reply.add_queues() = q;
  reply.set_uptime_s(seconds_between(started_, now));
  return reply;
}

int Dispatcher::devices_for_key(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [id, d] : devices_) n += d.key == key;
  return n;
}

int64_t Dispatcher::dropped_results() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

}  // namespace tensortune::tracker
