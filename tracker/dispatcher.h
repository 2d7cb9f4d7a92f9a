#pragma once
/// \file
/// The tracker's core, free of gRPC: devices per key, a queue per key made of the jobs'
/// items, dispatch of one item per free slot, leases, re-queueing, fairness and
/// exactly-once completion. Thread-safe; all calls may come from any thread. Callbacks
/// (sending work, recording, notifying a job) run outside the lock.
///
/// Prefetch: with DispatcherOptions::prefetch_per_device, a device also holds that many items
/// beyond its slots, which it starts as soon as a slot frees (a GPU waits for no round trip).
///
/// Fairness: a free slot of key K takes an item from the highest-priority job with queued
/// items for K; among equal priorities the clients (JobSpec::client) take turns, and each
/// client's jobs take turns (round robin at both levels), so a client that floods the queue
/// with jobs gets one turn in as many as there are clients, not one per job. Items of one job
/// go in order. A re-queued item goes to the front of its job's queue.
///
/// Physical bound: a device states the peak GFLOPS of one slot when it registers; a result
/// whose item needs `JobSpec::min_flop` operations and that claims more than the peak times
/// DispatcherOptions::peak_margin is completed as UNKNOWN_ERROR naming the claim, so a lying
/// or broken device cannot make an impossible timing the best record.
///
/// Leases: an expired lease re-queues its item, but the device keeps that slot busy until it
/// answers (its late result is dropped) or is dropped: a slow device that is still measuring
/// must not be handed a second measurement at once. The re-queued item avoids the devices
/// whose lease on it expired while any other device of its key is registered.
///
/// Pauses: a tracker that was itself stopped (SIGSTOP, VM migration) sees a gap between two
/// expire() calls; the gap is not the devices' silence, so it extends every heartbeat and
/// lease clock instead of dropping devices whose heartbeats are waiting in their streams.
///
/// Exactly once: an item is completed by the first result that arrives for its current
/// lease; a result for an older lease (from a device presumed dead) or for a finished item
/// is dropped and counted.
///
/// Twins: an item identical to one already queued or leased (same device key, workload,
/// target, config and timing, from any job) is not dispatched again. It waits for that item
/// and completes with its result once the archive holds it, so two clients tuning the same
/// workload at once pay for each config once. If the item it waits for is cancelled before
/// a device takes it, the first twin takes its place in its own job's queue.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "proto/farm.pb.h"
#include "schedule_space/measure.h"

namespace tensortune::tracker {

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct DispatcherOptions {
  /// A device that has not been heard from for this long is dropped and its items re-queued.
  double heartbeat_timeout_s = 6.0;
  /// A lease lasts the item's timing.timeout_s (10 s when 0) times 2 plus this margin
  /// (compilation, queueing in the device).
  double lease_margin_s = 30.0;
  /// An item whose device was lost this many times is completed as RUNTIME_DEVICE.
  int max_attempts = 3;
  /// Finished jobs stay in status() for this long after their last result.
  double finished_job_ttl_s = 600;
  /// expire() is called every fraction of a second; a longer gap between two calls means the
  /// tracker itself was not running, and the gap does not count as anyone's silence.
  double pause_gap_s = 1.0;
  /// A result above the device's registered peak GFLOPS times this is rejected. The peak is an
  /// upper bound already (highest clock, every FMA unit); the margin covers clocks the
  /// device could not read.
  double peak_margin = 1.5;
  /// Devices one key may have at once; a device beyond it is refused (`--max-devices-per-key`).
  int max_devices_per_key = 10000;
  /// Items a device holds beyond one per slot, queued on the device behind its running ones, so
  /// that a slot starts its next item without waiting for the tracker (`--prefetch`). Such an
  /// item's lease runs one lease longer. 0: one item per free slot.
  int prefetch_per_device = 0;
};

/// What a job is made of: the work items (ids filled in by the dispatcher).
struct JobSpec {
  std::string name;
  std::string device_key;
  std::string client;  ///< the credential that submitted it (fair share; status)
  int priority = 0;
  /// Per item, the fewest floating-point operations any implementation of its config does
  /// (a Winograd config's are fewer than its workload's); empty or 0: not bounded.
  std::vector<double> min_flop;
  std::vector<v1::WorkItem> items;  ///< position i = index i of the client's request
  /// Handed to the Recorder with every result (what the archive needs to store it).
  std::shared_ptr<const void> record_context;
};

/// A job's client: results as they complete (index into JobSpec::items).
using JobSink = std::function<void(int index, const schedule_space::MeasureResult& result)>;
/// Pushes an item down a device's stream; false when the stream is gone.
using SendWork = std::function<bool(const v1::WorkItem& item)>;
/// Called once per completed item: the archive. `device` names the device that measured it
/// (empty when no device did: gave up after lost devices). The recorder calls `then` (which
/// hands the result to the job's sink) once the result is stored, on any thread, in the order
/// the results came: a client never sees a result the archive could still lose.
using Recorder = std::function<void(const std::shared_ptr<const void>& record_context, int index,
                                    const schedule_space::MeasureResult& result,
                                    const std::string& device, std::function<void()> then)>;

/// What the dispatcher tells its watchers (the tracker's metrics) as things happen. Called under
/// the dispatcher's lock: implementations must be quick and must not call the dispatcher.
class DispatchObserver {
 public:
  virtual ~DispatchObserver() = default;
  /// An item went to a device after waiting this long in its queue.
  virtual void dispatched(const std::string& key, double waited_s) = 0;
  /// An item completed (`device`: who measured it; empty when it gave up after lost devices).
  virtual void completed(const std::string& key, const std::string& device,
                         const schedule_space::MeasureResult& result) = 0;
  /// A lease expired; an item went back to its queue (lease expired or device lost).
  virtual void lease_expired(const std::string& key) = 0;
  virtual void requeued(const std::string& key) = 0;
};

class Dispatcher {
 public:
  /// `observer` (optional) must outlive the dispatcher.
  explicit Dispatcher(DispatcherOptions options, Recorder recorder = nullptr,
                      DispatchObserver* observer = nullptr);

  /// `disconnect` is called (outside the lock) when the dispatcher drops the device.
  /// `hardware` describes it in status (a GPU server's GPUs); may be empty. `peak_gflops`: one
  /// slot's peak (0: not stated, its results are not bounded). Returns 0, adding nothing, when
  /// the key already has options.max_devices_per_key devices, or when a registered device has
  /// this name (names tell devices apart in the archive and in --exclude-device); `refused`
  /// then says which.
  enum class Refusal { kNone, kKeyFull, kNameTaken };
  uint64_t add_device(const std::string& key, int slots, const std::string& name, SendWork send,
                      std::function<void()> disconnect, std::string hardware = {},
                      double peak_gflops = 0, Refusal* refused = nullptr);
  /// Whether the key has room for another device (checked again by add_device).
  bool key_has_room(const std::string& key) const;
  /// Whether a registered device has this name (checked again by add_device).
  bool name_registered(const std::string& name) const;
  /// Drops the device (its stream ended): its leased items are re-queued.
  void remove_device(uint64_t device_id);
  /// The device is alive; `timing_fraction` is what it reported (Heartbeat.timing_fraction).
  void heartbeat(uint64_t device_id, double timing_fraction = 0);

  /// Queues the job; `already_done` items (index -> result, e.g. from the archive) complete
  /// at once without dispatch and without recording.
  uint64_t submit(JobSpec job, JobSink sink,
                  const std::map<int, schedule_space::MeasureResult>& already_done = {});
  /// Drops the job's queued items (its client went away); items already leased still finish
  /// and are recorded, but nobody is notified.
  void cancel_job(uint64_t job_id);
  bool job_finished(uint64_t job_id) const;

  /// A device's result. True when accepted; false for a stale lease or a finished item. A
  /// result above the device's peak is accepted as an UNKNOWN_ERROR (see "Physical bound").
  bool complete(uint64_t device_id, uint64_t item_id, uint64_t lease_id,
                schedule_space::MeasureResult result);

  /// Expires leases and silent devices as of `now`. Called periodically (the housekeeping
  /// thread); see "Pauses" above for a gap longer than options.pause_gap_s.
  void expire(Clock::time_point now);

  /// Registered devices with this key.
  int devices_for_key(const std::string& key) const;

  v1::StatusReply status() const;
  int64_t dropped_results() const;

 private:
  struct Device {
    std::string key, name;
    int slots = 1;
    std::string hardware;
    double peak_gflops = 0;
    int busy = 0;                ///< leased items, plus expired leases not yet answered
    double timing_fraction = 0;  ///< from its last heartbeat
    std::set<uint64_t> expired_leases;
    Clock::time_point last_seen;
    SendWork send;
    std::function<void()> disconnect;
  };
  struct Item {
    uint64_t job = 0;
    int index = 0;
    v1::WorkItem work;
    /// kTwin: waits for the identical item in flight (in_flight_[twin_key]).
    enum class State { kQueued, kLeased, kTwin, kDone } state = State::kQueued;
    uint64_t device = 0, lease = 0;
    Clock::time_point deadline;
    Clock::time_point queued_at;  ///< when it last entered its job's queue
    int attempts = 0;
    std::set<uint64_t> avoid;     ///< devices whose lease on this item expired
    std::string twin_key;         ///< what makes two items the same measurement
    std::vector<uint64_t> twins;  ///< items waiting for this one's result
  };
  struct Job {
    JobSpec spec;
    JobSink sink;
    std::deque<uint64_t> queue;  // item ids waiting
    int total = 0, running = 0, done = 0, failed = 0;
    int waiting_on_twins = 0;  ///< its items in state kTwin
    bool cancelled = false;
    Clock::time_point created, finished;
    bool is_finished() const { return done >= total && running == 0; }
  };
  struct Send {
    uint64_t device;
    SendWork send;
    v1::WorkItem work;
  };
  struct Notify {
    int index;
    JobSink sink;
    std::shared_ptr<const void> context;
    schedule_space::MeasureResult result;
    bool record;
    std::string device;
    /// The twins completed with this result: (index, sink) each, told after the job's own.
    std::vector<std::pair<int, JobSink>> twins;
  };

  // Fills free slots; returns the sends to perform outside the lock.
  std::vector<Send> dispatch_locked(Clock::time_point now);
  // Fills the device's free slots.
  void dispatch_to_locked(uint64_t device_id, Device& dev, Clock::time_point now,
                          std::vector<Send>& sends);
  std::optional<uint64_t> next_item_locked(const std::string& key, uint64_t device_id);
  bool may_take_locked(const Item& item, uint64_t device_id, const std::string& key) const;
  void prune_finished_jobs_locked(Clock::time_point now);
  /// Stamps the job finished and drops what only its remaining results needed.
  void mark_finished_locked(Job& job);
  void requeue_locked(uint64_t item_id, std::vector<Notify>& notes, const std::string& why);
  /// Queues the item, or makes it a twin of the identical item in flight.
  void enqueue_new_locked(uint64_t item_id, Job& job);
  /// The item is no longer the one in flight for its twin key (finished or cancelled).
  void leave_flight_locked(uint64_t item_id, const Item& item);
  /// The item leaves without a result (cancelled): its first twin, if any, takes its place.
  void release_twins_locked(uint64_t item_id);
  /// Completes a twin with its leader's result; returns whom to tell.
  std::pair<int, JobSink> finish_twin_locked(uint64_t twin_id,
                                             const schedule_space::MeasureResult& result);
  void finish_locked(uint64_t item_id, schedule_space::MeasureResult result, bool record,
                     std::vector<Notify>& notes, const std::string& device = {});
  /// The result, or an UNKNOWN_ERROR in its place when it claims more than the device's peak.
  schedule_space::MeasureResult bounded_locked(const Device& device, const Item& item,
                                               schedule_space::MeasureResult result) const;
  void drop_device_locked(uint64_t device_id, std::vector<Notify>& notes,
                          std::vector<std::function<void()>>& disconnects);
  void run(std::vector<Send> sends, std::vector<Notify> notes,
           std::vector<std::function<void()>> disconnects);

  DispatcherOptions options_;
  Recorder recorder_;
  DispatchObserver* observer_;
  mutable std::mutex mu_;
  std::map<uint64_t, Device> devices_;
  std::map<std::string, int> devices_per_key_;
  std::map<uint64_t, Item> items_;
  std::map<uint64_t, Job> jobs_;
  std::map<std::string, uint64_t> in_flight_;  ///< twin_key -> the queued or leased item
  // Round robin: "key/priority" -> the client served last; "key/priority/client" -> its job
  // served last.
  std::map<std::string, std::string> last_client_;
  std::map<std::string, uint64_t> last_served_;
  uint64_t next_id_ = 1;
  int64_t dropped_ = 0;
  Clock::time_point started_ = Clock::now();
  Clock::time_point last_expire_ = Clock::now();
  Clock::time_point last_silence_scan_{};  ///< when expire() last looked for silent devices
};

}  // namespace tensortune::tracker
