#include "tracker/dispatcher.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "support/log.h"

namespace tensortune::tracker {

namespace ss = schedule_space;

namespace {

ss::MeasureResult error_result(int64_t index, ss::MeasureErrorNo code, std::string message) {
  ss::MeasureResult r;
  r.config_index = index;
  r.costs = {ss::kErrorCost};
  r.error_no = code;
  r.error_msg = std::move(message);
  r.timestamp =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return r;
}

}  // namespace

Dispatcher::Dispatcher(DispatcherOptions options, Recorder recorder, DispatchObserver* observer)
    : options_(options), recorder_(std::move(recorder)), observer_(observer) {}

uint64_t Dispatcher::add_device(const std::string& key, int slots, const std::string& name,
                                SendWork send, std::function<void()> disconnect,
                                std::string hardware, double peak_gflops, Refusal* refused) {
  std::vector<Send> sends;
  uint64_t id;
  if (refused) *refused = Refusal::kNone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [_, other] : devices_)
      if (other.name == name) {
        if (refused) *refused = Refusal::kNameTaken;
        return 0;
      }
    int& of_key = devices_per_key_[key];
    if (of_key >= options_.max_devices_per_key) {
      if (refused) *refused = Refusal::kKeyFull;
      return 0;
    }
    ++of_key;
    id = next_id_++;
    Device d;
    d.key = key;
    d.name = name;
    d.slots = slots;
    d.hardware = std::move(hardware);
    d.peak_gflops = peak_gflops;
    d.last_seen = Clock::now();
    d.send = std::move(send);
    d.disconnect = std::move(disconnect);
    devices_[id] = std::move(d);
    sends = dispatch_locked(Clock::now());
  }
  logger("tracker")->info("device {} '{}' registered: key {}, {} slot(s)", id, name, key, slots);
  run(std::move(sends), {}, {});
  return id;
}

bool Dispatcher::name_registered(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [_, d] : devices_)
    if (d.name == name) return true;
  return false;
}

bool Dispatcher::key_has_room(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_per_key_.find(key);
  return it == devices_per_key_.end() || it->second < options_.max_devices_per_key;
}

void Dispatcher::remove_device(uint64_t device_id) {
  std::vector<Notify> notes;
  std::vector<std::function<void()>> disconnects;
  std::vector<Send> sends;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!devices_.count(device_id)) return;
    drop_device_locked(device_id, notes, disconnects);
    disconnects.clear();  // its stream already ended
    sends = dispatch_locked(Clock::now());
  }
  run(std::move(sends), std::move(notes), {});
}

void Dispatcher::heartbeat(uint64_t device_id, double timing_fraction) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(device_id);
  if (it == devices_.end()) return;
  it->second.last_seen = Clock::now();
  // A device's own figure, shown as it is: bounded so a broken one cannot print nonsense.
  it->second.timing_fraction =
      std::isfinite(timing_fraction) ? std::clamp(timing_fraction, 0.0, 1.0) : 0.0;
}

uint64_t Dispatcher::submit(JobSpec spec, JobSink sink,
                            const std::map<int, ss::MeasureResult>& already_done) {
  std::vector<Send> sends;
  std::vector<Notify> notes;
  uint64_t job_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    prune_finished_jobs_locked(Clock::now());
    job_id = next_id_++;
    Job& job = jobs_[job_id];
    job.sink = sink;
    job.created = Clock::now();
    job.total = static_cast<int>(spec.items.size());
    std::vector<v1::WorkItem> work = std::move(spec.items);
    spec.items.clear();  // the items own the work now
    job.spec = std::move(spec);
    for (size_t i = 0; i < work.size(); ++i) {
      const uint64_t item_id = next_id_++;
      Item item;
      item.job = job_id;
      item.index = static_cast<int>(i);
      item.work = std::move(work[i]);
      item.work.set_item_id(item_id);
      item.queued_at = Clock::now();
      items_[item_id] = std::move(item);
      if (auto done = already_done.find(static_cast<int>(i)); done != already_done.end()) {
        finish_locked(item_id, done->second, /*record=*/false, notes);
      } else {
        enqueue_new_locked(item_id, job);
      }
    }
    sends = dispatch_locked(Clock::now());
  }
  run(std::move(sends), std::move(notes), {});
  return job_id;
}

void Dispatcher::cancel_job(uint64_t job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  job.cancelled = true;
  job.sink = nullptr;
  // Its twins first (they wait on items of other jobs, or of this one), then its queued items,
  // whose twins in other jobs take their places.
  for (auto item = items_.begin(); item != items_.end();) {
    if (item->second.job != job_id || item->second.state != Item::State::kTwin) {
      ++item;
      continue;
    }
    if (auto lead = in_flight_.find(item->second.twin_key); lead != in_flight_.end()) {
      auto& twins = items_[lead->second].twins;
      twins.erase(std::remove(twins.begin(), twins.end(), item->first), twins.end());
    }
    --job.total;
    --job.waiting_on_twins;
    item = items_.erase(item);
  }
  // Last first: each heir goes to the front of its job's queue, so they keep this order.
  for (auto item = job.queue.rbegin(); item != job.queue.rend(); ++item) {
    release_twins_locked(*item);
    items_.erase(*item);
  }
  job.total -= static_cast<int>(job.queue.size());
  job.queue.clear();
  if (job.is_finished()) mark_finished_locked(job);
}
bool Dispatcher::job_finished(uint64_t job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_id);
  return it == jobs_.end() || it->second.done >= it->second.total;
}

bool Dispatcher::complete(uint64_t device_id, uint64_t item_id, uint64_t lease_id,
                          ss::MeasureResult result) {
  std::vector<Send> sends;
  std::vector<Notify> notes;
  bool accepted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    auto dev = devices_.find(device_id);
    auto it = items_.find(item_id);
    if (dev != devices_.end() && dev->second.expired_leases.erase(lease_id)) {
      // The answer to an expired lease: the device is free again, the result is not needed.
      --dev->second.busy;
      dev->second.last_seen = now;
      ++dropped_;
      logger("tracker")->warn(
          "dropped a late result for item {} from device {} '{}': its lease "
          "expired; the slot is free again",
          item_id, device_id, dev->second.name);
    } else if (it == items_.end() || it->second.state != Item::State::kLeased ||
               it->second.lease != lease_id || it->second.device != device_id) {
      ++dropped_;
      logger("tracker")->warn("dropped a result for item {} lease {} from device {}: {}", item_id,
                              lease_id, device_id,
                              it == items_.end() ? "unknown item" : "not its current lease");
      return false;
    } else {
      if (dev != devices_.end()) {
        --dev->second.busy;
        dev->second.last_seen = now;
      }
      --jobs_[it->second.job].running;
      std::string device_name;
      if (dev != devices_.end()) {
        device_name = dev->second.name;
        result = bounded_locked(dev->second, it->second, std::move(result));
      }
      finish_locked(item_id, std::move(result), /*record=*/true, notes, device_name);
      accepted = true;
    }
    // A completion frees a slot of this device only; nothing changes for the others.
    if (dev != devices_.end()) dispatch_to_locked(device_id, dev->second, now, sends);
  }
  run(std::move(sends), std::move(notes), {});
  return accepted;
}

void Dispatcher::expire(Clock::time_point now) {
  std::vector<Send> sends;
  std::vector<Notify> notes;
  std::vector<std::function<void()>> disconnects;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const double gap = seconds_between(last_expire_, now);
    if (gap > options_.pause_gap_s) {
      // We were not running (stopped, migrated, starved): whatever the devices sent meanwhile
      // is still waiting in their streams, so their clocks restart where ours stopped.
      const Clock::duration shift = now - last_expire_;
      for (auto& [id, d] : devices_) d.last_seen = std::min(now, d.last_seen + shift);
      for (auto& [id, item] : items_)
        if (item.state == Item::State::kLeased) item.deadline += shift;
      logger("tracker")->warn(
          "the tracker did not run for {:.1f} s: heartbeat and lease clocks "
          "extended by that much",
          gap);
    }
    if (now > last_expire_) last_expire_ = now;
    // Silence is looked for a few times per timeout, not on every call: with 10,000 devices
    // the walk over them was most of an idle tracker's own CPU.
    std::vector<uint64_t> silent;
    const double scan_every = std::min(1.0, options_.heartbeat_timeout_s / 4);
    if (seconds_between(last_silence_scan_, now) >= scan_every) {
      last_silence_scan_ = now;
      for (const auto& [id, d] : devices_)
        if (seconds_between(d.last_seen, now) > options_.heartbeat_timeout_s) silent.push_back(id);
    }
    for (uint64_t id : silent) {
      logger("tracker")->warn("device {} '{}' silent for {:.1f} s: dropped", id, devices_[id].name,
                              seconds_between(devices_[id].last_seen, now));
      drop_device_locked(id, notes, disconnects);
    }
    std::vector<uint64_t> expired;
    for (const auto& [id, item] : items_)
      if (item.state == Item::State::kLeased && now > item.deadline) expired.push_back(id);
    for (uint64_t id : expired) {
      Item& item = items_[id];
      // The device may still be measuring it: its slot stays busy until it answers.
      if (auto d = devices_.find(item.device); d != devices_.end())
        d->second.expired_leases.insert(item.lease);
      item.avoid.insert(item.device);
      --jobs_[item.job].running;
      if (observer_) observer_->lease_expired(jobs_[item.job].spec.device_key);
      requeue_locked(id, notes, "lease expired on device " + std::to_string(item.device));
    }
    prune_finished_jobs_locked(now);
    sends = dispatch_locked(now);
  }
  run(std::move(sends), std::move(notes), std::move(disconnects));
}

void Dispatcher::drop_device_locked(uint64_t device_id, std::vector<Notify>& notes,
                                    std::vector<std::function<void()>>& disconnects) {
  auto dev = devices_.find(device_id);
  if (dev == devices_.end()) return;
  if (dev->second.disconnect) disconnects.push_back(dev->second.disconnect);
  const std::string name = dev->second.name;
  if (auto k = devices_per_key_.find(dev->second.key);
      k != devices_per_key_.end() && --k->second <= 0)
    devices_per_key_.erase(k);
  devices_.erase(dev);
  // Collect first: re-queueing may finish (and erase) an item that gave up.
  std::vector<uint64_t> leased;
  for (const auto& [id, item] : items_)
    if (item.state == Item::State::kLeased && item.device == device_id) leased.push_back(id);
  for (uint64_t id : leased) {
    --jobs_[items_[id].job].running;
    requeue_locked(id, notes, "device '" + name + "' lost");
  }
  logger("tracker")->info("device {} '{}' removed", device_id, name);
}

void Dispatcher::requeue_locked(uint64_t item_id, std::vector<Notify>& notes,
                                const std::string& why) {
  Item& item = items_[item_id];
  item.state = Item::State::kQueued;
  item.lease = 0;
  if (++item.attempts >= options_.max_attempts) {
    ss::MeasureResult gave_up =
        error_result(item.work.config().index(), ss::MeasureErrorNo::kRuntimeDevice,
                     why + "; gave up after " + std::to_string(item.attempts) + " attempts");
    gave_up.device_key = jobs_[item.job].spec.device_key;  // where it was tried
    finish_locked(item_id, std::move(gave_up), /*record=*/true, notes);
    return;
  }
  Job& job = jobs_[item.job];
  if (job.cancelled) {
    // Nobody waits for it: it leaves the job (which may then be finished), its twins stay.
    release_twins_locked(item_id);
    items_.erase(item_id);
    --job.total;
    if (job.is_finished()) mark_finished_locked(job);
    return;
  }
  item.queued_at = Clock::now();
  job.queue.push_front(item_id);
  if (observer_) observer_->requeued(job.spec.device_key);
  logger("tracker")->info("item {} (job {} index {}) re-queued: {}", item_id, item.job, item.index,
                          why);
}

ss::MeasureResult Dispatcher::bounded_locked(const Device& device, const Item& item,
                                             ss::MeasureResult result) const {
  const JobSpec& spec = jobs_.at(item.job).spec;
  if (!result.ok() || device.peak_gflops <= 0 ||
      item.index >= static_cast<int>(spec.min_flop.size()))
    return result;
  const double flop = spec.min_flop[item.index];
  const double seconds = result.mean_cost();
  if (flop <= 0) return result;
  // A CPU slot's peak is per thread; a measurement on N threads may do N times as much.
  const int threads = std::max(1, item.work.timing().threads());
  const double bound = device.peak_gflops * threads * options_.peak_margin;
  const double claimed =
      seconds > 0 ? flop / seconds / 1e9 : std::numeric_limits<double>::infinity();
  if (claimed <= bound) return result;
  const std::string why = fmt::format(
      "device '{}' reported {:.3g} s, which is {:.4g} GFLOPS for config {}: above its registered "
      "peak of {:.4g} GFLOPS per slot and thread x {} thread(s) x {:.2g}; rejected as impossible",
      device.name, seconds, claimed, result.config_index, device.peak_gflops, threads,
      options_.peak_margin);
  logger("tracker")->warn("{}", why);
  ss::MeasureResult rejected =
      error_result(result.config_index, ss::MeasureErrorNo::kUnknownError, why);
  rejected.device_key = result.device_key;
  rejected.threads = result.threads;
  rejected.number = result.number;
  rejected.all_cost_s = result.all_cost_s;
  rejected.compile_s = result.compile_s;
  return rejected;
}

void Dispatcher::finish_locked(uint64_t item_id, ss::MeasureResult result, bool record,
                               std::vector<Notify>& notes, const std::string& device) {
  Item& item = items_[item_id];
  item.state = Item::State::kDone;
  leave_flight_locked(item_id, item);
  Job& job = jobs_[item.job];
  ++job.done;
  if (!result.ok()) ++job.failed;
  if (observer_ && record) observer_->completed(job.spec.device_key, device, result);
  Notify note{item.index, job.sink, job.spec.record_context, std::move(result), record, device, {}};
  for (uint64_t twin : item.twins) note.twins.push_back(finish_twin_locked(twin, note.result));
  notes.push_back(std::move(note));
  if (job.is_finished()) mark_finished_locked(job);
  items_.erase(item_id);
}

void Dispatcher::mark_finished_locked(Job& job) {
  job.finished = Clock::now();
  // A finished job stays in status for finished_job_ttl_s with its counts only: what it held
  // for its results (the archive's context with its config space, the client's sink, the
  // bounds) goes now, not ten minutes later (found by the soak: the tracker's RSS grew by
  // every job of the last ten minutes).
  job.sink = nullptr;
  job.spec.record_context.reset();
  job.spec.min_flop = {};
}

void Dispatcher::prune_finished_jobs_locked(Clock::time_point now) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const Job& j = it->second;
    if (j.is_finished() && seconds_between(j.finished, now) > options_.finished_job_ttl_s)
      it = jobs_.erase(it);
    else
      ++it;
  }
}

bool Dispatcher::may_take_locked(const Item& item, uint64_t device_id,
                                 const std::string& key) const {
  if (!item.avoid.count(device_id)) return true;
  // It expired here before: only when every registered device of the key has failed it too.
  for (const auto& [id, d] : devices_)
    if (d.key == key && !item.avoid.count(id)) return false;
  return true;
}

std::optional<uint64_t> Dispatcher::next_item_locked(const std::string& key, uint64_t device_id) {
  // The first item of a job's queue that this device may take.
  auto takeable = [&](Job& job) {
    return std::find_if(job.queue.begin(), job.queue.end(), [&](uint64_t item) {
      return may_take_locked(items_[item], device_id, key);
    });
  };
  // Highest priority with takeable items; among equals, the first job after the one served
  // last (ids increase with submission, so this is round robin in submission order).
  int best_priority = 0;
  bool found = false;
  for (auto& [id, job] : jobs_)
    if (job.spec.device_key == key && (!found || job.spec.priority > best_priority) &&
        takeable(job) != job.queue.end()) {
      best_priority = job.spec.priority;
      found = true;
    }
  if (!found) return std::nullopt;
  // Turns are kept per priority, so a burst of high-priority work does not reset them. First
  // the client after the one served last (in name order), then that client's job after the one
  // it was served last (ids increase with submission).
  const std::string turn = key + "/" + std::to_string(best_priority);
  std::map<std::string, std::vector<uint64_t>> ready;  // client -> its takeable jobs, in order
  for (auto& [id, job] : jobs_)
    if (job.spec.device_key == key && job.spec.priority == best_priority &&
        takeable(job) != job.queue.end())
      ready[job.spec.client].push_back(id);
  auto client = ready.end();
  if (auto last = last_client_.find(turn); last != last_client_.end())
    client = ready.upper_bound(last->second);
  if (client == ready.end()) client = ready.begin();
  const std::string client_turn = turn + "/" + client->first;
  const uint64_t last_job = last_served_.count(client_turn) ? last_served_[client_turn] : 0;
  const std::vector<uint64_t>& ids = client->second;
  auto job_id = std::upper_bound(ids.begin(), ids.end(), last_job);
  if (job_id == ids.end()) job_id = ids.begin();
  last_client_[turn] = client->first;
  last_served_[client_turn] = *job_id;
  Job& job = jobs_[*job_id];
  auto pos = takeable(job);
  const uint64_t item = *pos;
  job.queue.erase(pos);
  return item;
}

std::vector<Dispatcher::Send> Dispatcher::dispatch_locked(Clock::time_point now) {
  // Only devices of keys with queued work can take any: with thousands of idle devices, the
  // others are skipped without asking for an item each.
  std::set<std::string> keys_with_work;
  for (const auto& [id, job] : jobs_)
    if (!job.queue.empty()) keys_with_work.insert(job.spec.device_key);
  std::vector<Send> sends;
  if (keys_with_work.empty()) return sends;
  for (auto& [device_id, dev] : devices_)
    if (dev.busy < dev.slots + options_.prefetch_per_device && keys_with_work.count(dev.key))
      dispatch_to_locked(device_id, dev, now, sends);
  return sends;
}

void Dispatcher::dispatch_to_locked(uint64_t device_id, Device& dev, Clock::time_point now,
                                    std::vector<Send>& sends) {
  while (dev.busy < dev.slots + options_.prefetch_per_device) {
    auto item_id = next_item_locked(dev.key, device_id);
    if (!item_id) break;
    Item& item = items_[*item_id];
    item.state = Item::State::kLeased;
    item.device = device_id;
    item.lease = next_id_++;
    const double timeout =
        item.work.timing().timeout_s() > 0 ? item.work.timing().timeout_s() : 10.0;
    // A prefetched item waits on the device behind a running one: one lease more.
    const double leases = dev.busy >= dev.slots ? 2 : 1;
    item.deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                              leases * (2 * timeout + options_.lease_margin_s)));
    item.work.set_lease_id(item.lease);
    if (observer_) observer_->dispatched(dev.key, seconds_between(item.queued_at, now));
    ++dev.busy;
    ++jobs_[item.job].running;
    sends.push_back(Send{device_id, dev.send, item.work});
  }
}

void Dispatcher::run(std::vector<Send> sends, std::vector<Notify> notes,
                     std::vector<std::function<void()>> disconnects) {
  for (auto& d : disconnects) d();
  for (auto& n : notes) {
    // The job, then the twins that waited for the same measurement: after the archive has it.
    std::function<void()> tell;
    if (n.sink || !n.twins.empty())
      tell = [sink = std::move(n.sink), index = n.index, result = n.result,
              twins = std::move(n.twins)] {
        if (sink) sink(index, result);
        for (const auto& [twin_index, twin_sink] : twins)
          if (twin_sink) twin_sink(twin_index, result);
      };
    if (n.record && recorder_) {
      recorder_(n.context, n.index, n.result, n.device, std::move(tell));
    } else if (tell) {
      tell();
    }
  }
  for (auto& s : sends)
    if (!s.send(s.work)) {
      logger("tracker")->warn("sending item {} to device {} failed: dropping the device",
                              s.work.item_id(), s.device);
      remove_device(s.device);
    }
}

}  // namespace tensortune::tracker
