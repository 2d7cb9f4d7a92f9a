#include "tracker/metrics.h"

#include <malloc.h>
#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sqlite3.h>

#include <chrono>
#include <map>
#include <sstream>

namespace tensortune::tracker {

namespace ss = schedule_space;

namespace {

constexpr size_t kKeptErrors = 500;

// Latencies from a millisecond to minutes: dispatch waits for free slots, writes for the disk.
const prometheus::Histogram::BucketBoundaries& latency_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.001, 0.005, 0.01, 0.05, 0.1, 0.5,
                                                         1,     5,     10,   30,   60,  300};
  return b;
}

prometheus::MetricFamily gauge_family(const std::string& name, const std::string& help) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = prometheus::MetricType::Gauge;
  return f;
}

void add_gauge(prometheus::MetricFamily& f, std::vector<prometheus::ClientMetric::Label> labels,
               double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

}  // namespace

TrackerMetrics::TrackerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  results_ = &prometheus::BuildCounter()
                  .Name("tensortune_results_total")
                  .Help(
                      "Measurements completed, by device key and AutoTVM error code "
                      "(NO_ERROR for a timing)")
                  .Register(*registry_);
  lease_expiries_ = &prometheus::BuildCounter()
                         .Name("tensortune_lease_expiries_total")
                         .Help("Leases that expired before their device answered")
                         .Register(*registry_);
  requeues_ = &prometheus::BuildCounter()
                   .Name("tensortune_requeues_total")
                   .Help("Items put back in their queue (lease expired or device lost)")
                   .Register(*registry_);
  dispatch_latency_ = &prometheus::BuildHistogram()
                           .Name("tensortune_dispatch_latency_seconds")
                           .Help("Time an item waited in its queue before a device took it")
                           .Register(*registry_);
  archive_writes_ = &prometheus::BuildCounter()
                         .Name("tensortune_archive_writes_total")
                         .Help("Results written to the archive, by outcome")
                         .Register(*registry_);
  archive_latency_ = &prometheus::BuildHistogram()
                          .Name("tensortune_archive_write_seconds")
                          .Help("Time to commit one batch of results to the SQLite archive")
                          .Register(*registry_)
                          .Add({}, latency_buckets());
}

TrackerMetrics::~TrackerMetrics() = default;

void TrackerMetrics::dispatched(const std::string& key, double waited_s) {
  dispatch_latency_->Add({{"key", key}}, latency_buckets()).Observe(waited_s);
}

void TrackerMetrics::completed(const std::string& key, const std::string& device,
                               const ss::MeasureResult& result) {
  results_->Add({{"key", key}, {"error", std::string(ss::measure_error_name(result.error_no))}})
      .Increment();
  if (result.ok()) return;
  RecentError e;
  e.timestamp =
      result.timestamp > 0
          ? result.timestamp
          : std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
  e.device = device;
  e.device_key = key;
  e.error = ss::measure_error_name(result.error_no);
  e.message = result.error_msg.substr(0, 500);
  e.config_index = result.config_index;
  std::lock_guard<std::mutex> lock(errors_mu_);
  errors_.push_front(std::move(e));
  if (errors_.size() > kKeptErrors) errors_.pop_back();
}

void TrackerMetrics::lease_expired(const std::string& key) {
  lease_expiries_->Add({{"key", key}}).Increment();
}

void TrackerMetrics::requeued(const std::string& key) {
  requeues_->Add({{"key", key}}).Increment();
}

void TrackerMetrics::archive_write(double seconds, bool ok, size_t results) {
  archive_latency_->Observe(seconds);
  archive_writes_->Add({{"outcome", ok ? "ok" : "failed"}}).Increment(static_cast<double>(results));
}

std::string TrackerMetrics::scrape(const v1::StatusReply& s) const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  auto devices = gauge_family("tensortune_devices",
                              "Registered device servers by key and state (busy: a slot in use)");
  auto slots = gauge_family("tensortune_slots", "Measurement slots by key and state");
  auto queue = gauge_family("tensortune_queue_items",
                            "Items of unfinished jobs by key and state (queued, running)");
  auto jobs = gauge_family("tensortune_jobs", "Jobs by state (running, finished and still listed)");
  auto archived = gauge_family("tensortune_archived_results", "Results in the archive");
  auto uptime = gauge_family("tensortune_uptime_seconds", "Seconds since the tracker started");
  // SQLite's own allocations (its page caches, up to 64 MiB per archive connection, and
  // statements): the part of the tracker's heap that grows with the archive until the caches
  // are full, told apart from everything else.
  auto sqlite_heap =
      gauge_family("tensortune_sqlite_heap_bytes",
                   "Bytes SQLite has allocated in the tracker (page caches included)");
  // glibc's own count of the heap (all arenas): bytes handed out and not freed, and bytes
  // freed but kept in the arenas. RSS cannot tell a leak (in use grows) from fragmentation
  // (free grows while in use stays); these two can.
  auto malloc_in_use = gauge_family("tensortune_malloc_in_use_bytes",
                                    "Heap bytes allocated and not yet freed (glibc mallinfo2)");
  auto malloc_free = gauge_family("tensortune_malloc_free_bytes",
                                  "Heap bytes freed but still held by glibc's arenas (mallinfo2)");
  auto timing = gauge_family("tensortune_device_timing_fraction",
                             "Share of a device's slot time spent timing kernels over the last "
                             "minute, as its heartbeat said (0-1)");
  for (const auto& d : s.devices())
    add_gauge(timing, {{"key", d.device_key()}, {"device", d.name()}}, d.timing_fraction());
  std::map<std::pair<std::string, std::string>, double> device_counts;
  for (const auto& d : s.devices()) {
    device_counts[{d.device_key(), d.busy() > 0 ? "busy" : "idle"}] += 1;
    device_counts[{d.device_key(), d.busy() > 0 ? "idle" : "busy"}] += 0;
  }
  for (const auto& [k, v] : device_counts)
    add_gauge(devices, {{"key", k.first}, {"state", k.second}}, v);
  for (const auto& q : s.queues()) {
    add_gauge(slots, {{"key", q.device_key()}, {"state", "free"}}, q.free_slots());
    add_gauge(slots, {{"key", q.device_key()}, {"state", "busy"}}, q.slots() - q.free_slots());
    add_gauge(queue, {{"key", q.device_key()}, {"state", "queued"}}, q.queued());
    add_gauge(queue, {{"key", q.device_key()}, {"state", "running"}}, q.running());
  }
  double running = 0, finished = 0;
  for (const auto& j : s.jobs()) (j.finished() ? finished : running) += 1;
  add_gauge(jobs, {{"state", "running"}}, running);
  add_gauge(jobs, {{"state", "finished"}}, finished);
  add_gauge(archived, {}, static_cast<double>(s.archived_results()));
  add_gauge(uptime, {}, s.uptime_s());
  add_gauge(sqlite_heap, {}, static_cast<double>(sqlite3_memory_used()));
  const struct mallinfo2 heap = mallinfo2();
  add_gauge(malloc_in_use, {}, static_cast<double>(heap.uordblks + heap.hblkhd));
  add_gauge(malloc_free, {}, static_cast<double>(heap.fordblks));
  for (auto* f : {&devices, &slots, &queue, &jobs, &archived, &uptime, &sqlite_heap, &malloc_in_use,
                  &malloc_free, &timing})
    families.push_back(*f);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

std::vector<RecentError> TrackerMetrics::recent_errors(const std::string& device,
                                                       size_t limit) const {
  std::lock_guard<std::mutex> lock(errors_mu_);
  std::vector<RecentError> out;
  for (const auto& e : errors_) {
    if (out.size() >= limit) break;
    if (device.empty() || e.device == device) out.push_back(e);
  }
  return out;
}

}  // namespace tensortune::tracker
