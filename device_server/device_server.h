#pragma once
/// \file
/// The device server: dials out to the tracker, registers its key and slots, and measures
/// what it is sent, one item per slot at a time, each in a worker process. Whenever the
/// tracker goes away it waits for it (re-dialling every 0.5 s at most) and registers again
/// within about a second of the tracker listening, for as long as it runs. A registration the
/// tracker refuses (wrong token, invalid key) ends it with the tracker's reason: that is not
/// a transient failure. Kernels come built with the item (GPU servers always take cubins; CPU
/// servers take object code only with accept_built_code) or are built here from (workload,
/// config, target); either way only from the tracker's authenticated stream, in a worker.
#include <atomic>
#include <string>
#include <vector>

#include "proto/rpc_channel.h"
#include "support/error.h"

namespace tensortune::device_server {

struct DeviceServerOptions {
  wire::TrackerEndpoint tracker;
  std::string device_key;  ///< empty with `gpus`: "cuda-smXY" of the GPUs
  int slots = 1;           ///< CPU servers; a GPU server has one slot per GPU
  /// GPU ordinals to serve (a GPU server: CUDA templates, one slot and one worker process per
  /// GPU, each worker measuring on its GPU); empty: a CPU server. All must share one compute
  /// capability.
  std::vector<int> gpus;
  std::string name;  ///< empty: host:pid
  std::string worker_executable = "/proc/self/exe";
  /// Seconds a worker may take beyond the item's timing.timeout_s (compile, reference check).
  double worker_grace_s = 20;
  /// > 0: do not build or run anything; every item "takes" this many milliseconds and
  /// succeeds (for benchmarks of the farm itself).
  double simulate_ms = 0;
  double heartbeat_interval_s = 2;
  /// Largest ss::workload_bytes an item may need (WorkerOptions::max_work_bytes); 0: half of
  /// this machine's memory shared among the slots (and at most half a GPU's memory).
  double max_work_bytes = 0;
  /// A CPU worker's address-space bound (WorkerOptions::memory_limit_bytes); 0: this machine's
  /// memory shared among the slots.
  double worker_memory_bytes = 0;
  /// A GPU server also compiles items sent without a built kernel (clients that do not build;
  /// WorkerOptions::build_on_device).
  bool build_on_device = false;
  /// A builder server (`tensortune builder`): registers as key wire::kBuilderKey and answers
  /// each item with the kernel it built (MeasureResult::kernel), for clients that do not build
  /// on their own cores; it times nothing.
  bool builder = false;
  /// A CPU server loads the object code items carry instead of compiling them
  /// (WorkerOptions::accept_built_code): opt-in, since that code runs on this machine.
  bool accept_built_code = false;
  /// Test-only: faults the workers inject (see WorkerOptions::fault_inject).
  std::string fault_inject;
  /// The peak GFLOPS of one slot on one thread (a GPU server: one GPU) stated at registration,
  /// which bounds the timings the tracker accepts; 0: computed (peak_flops.h).
  double peak_gflops = 0;
  /// Serve this server's Prometheus metrics at /metrics on this port (device_metrics.h); -1:
  /// none, 0: any free port.
  int metrics_port = -1;
  std::string metrics_host = "127.0.0.1";
};

/// Runs until `stop` becomes true. Fails on bad options and on a refused registration.
Status run_device_server(const DeviceServerOptions& options, const std::atomic<bool>& stop);

}  // namespace tensortune::device_server
