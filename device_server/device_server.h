#pragma once
/// \file
/// The device server: dials out to the tracker, registers its key and slots, and measures
/// what it is sent, one item per slot at a time, each in a worker process. It reconnects
/// with back-off (0.2 s doubling to 5 s) whenever the tracker goes away, for as long as it
/// runs. It builds kernels from (workload, config, target) only; no code crosses the wire.
#include <atomic>
#include <string>

#include "proto/rpc_channel.h"
#include "support/error.h"

namespace tensortune::device {

struct DeviceServerOptions {
  wire::TrackerEndpoint tracker;
  std::string device_key;
  int slots = 1;
  std::string name;            ///< empty: host:pid
  std::string worker_executable = "/proc/self/exe";
  /// Seconds a worker may take beyond the item's timing.timeout_s (compile, reference check).
  double worker_grace_s = 20;
  /// > 0: do not build or run anything; every item "takes" this many milliseconds and
  /// succeeds (for benchmarks of the farm itself).
  double simulate_ms = 0;
  double heartbeat_interval_s = 2;
};

/// Runs until `stop` becomes true. Fails only on bad options.
Status run_device_server(const DeviceServerOptions& options, const std::atomic<bool>& stop);

}  // namespace tensortune::device
