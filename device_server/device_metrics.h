#pragma once
/// \file
/// A device server's own Prometheus metrics (`device --metrics-port`): measurements
/// by error code and their wall time, busy slots, worker restarts, the seconds its slots spent
/// timing kernels and that share of their wall time over the last minute (timing_share.h), and
/// whether it is registered with its tracker. Served at /metrics on a small HTTP port of its own
/// (no token: nothing in them is secret); anything else is 404.
#include <functional>
#include <memory>
#include <string>

#include "proto/tuning.pb.h"
#include "support/error.h"

namespace tensortune::device_server {

class DeviceMetrics {
 public:
  /// `restarts` is read at each scrape (the workers' restarts so far).
  DeviceMetrics(std::function<int()> restarts, int slots);
  ~DeviceMetrics();

  void slot_taken();
  /// A slot finished an item after `seconds` of wall time with this result, whose kernel ran
  /// `timed_s` while timed.
  void measured(const v1::MeasureResult& result, double seconds, double timed_s);
  /// The share of the slots' wall time spent timing kernels over the last minute, in [0, 1].
  double timing_fraction() const;
  void registered(bool connected);

  /// Serves /metrics on host:port (0: any free port) from a thread of its own; returns the
  /// port bound.
  Expected<int> serve(const std::string& host, int port);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortune::device_server
