#pragma once
/// \file
/// The tracker's Prometheus metrics. Counters and histograms of what happens (items
/// dispatched, results by error code, lease expiries, re-queues, archive writes) are fed as it
/// happens; gauges of the farm's state (devices, slots, queues, jobs) are read from the
/// dispatcher's status at each scrape, so they never drift from it. Also keeps each device's
/// recent errors for the dashboard.
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proto/farm.pb.h"
#include "tracker/dispatcher.h"

namespace prometheus {
class Registry;
class Counter;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace tensortune::tracker {

/// One failed measurement, as the dashboard lists a device's recent errors.
struct RecentError {
  double timestamp = 0;                   ///< unix seconds
  std::string device, device_key, error;  ///< error: MeasureErrorNo's name
  std::string message;
  int64_t config_index = 0;
};

class TrackerMetrics final : public DispatchObserver {
 public:
  TrackerMetrics();
  ~TrackerMetrics() override;

  void dispatched(const std::string& key, double waited_s) override;
  void completed(const std::string& key, const std::string& device,
                 const schedule_space::MeasureResult& result) override;
  void lease_expired(const std::string& key) override;
  void requeued(const std::string& key) override;
  /// One committed batch of `results` results in the archive (its time: the transaction's).
  void archive_write(double seconds, bool ok, size_t results = 1);

  /// Prometheus text exposition format (version 0.0.4): the counters and histograms, and the
  /// gauges of `status` (plus the archive's result count).
  std::string scrape(const v1::StatusReply& status) const;

  /// The newest errors first, at most `limit`; of one device when `device` is not empty.
  std::vector<RecentError> recent_errors(const std::string& device, size_t limit) const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* results_;
  prometheus::Family<prometheus::Counter>* lease_expiries_;
  prometheus::Family<prometheus::Counter>* requeues_;
  prometheus::Family<prometheus::Histogram>* dispatch_latency_;
  prometheus::Family<prometheus::Counter>* archive_writes_;
  prometheus::Histogram* archive_latency_;
  mutable std::mutex errors_mu_;
  std::deque<RecentError> errors_;  ///< newest first, bounded
};

}  // namespace tensortune::tracker
