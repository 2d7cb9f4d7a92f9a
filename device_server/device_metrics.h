#pragma once
/// \file
/// A device server's own Prometheus metrics (`device --metrics-port`): measurements
/// by error code and their wall time, busy slots, worker restarts, and whether it is registered
/// with its tracker. Served at /metrics on a small HTTP port of its own (no token: nothing in
/// them is secret); anything else is 404.
#include <functional>
#include <memory>
#include <string>

#include "proto/tuning.pb.h"
#include "support/error.h"

namespace tensortune::device_server {

class DeviceMetrics {
 public:
  /// `restarts` is read at each scrape (the workers' restarts so far).
  explicit DeviceMetrics(std::function<int()> restarts);
  ~DeviceMetrics();

  void slot_taken();
  /// A slot finished an item after `seconds` of wall time with this result.
  void measured(const v1::MeasureResult& result, double seconds);
  void registered(bool connected);

  /// Serves /metrics on host:port (0: any free port) from a thread of its own; returns the
  /// port bound.
  Expected<int> serve(const std::string& host, int port);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortune::device_server
