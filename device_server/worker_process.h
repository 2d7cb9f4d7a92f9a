#pragma once
/// \file
/// One worker process of a device server: `tensortune device-worker`, spawned with pipes.
/// The worker builds and times one config at a time; if it crashes or hangs, this side
/// turns that into a result (RUNTIME_DEVICE naming the signal, RUN_TIMEOUT naming the time),
/// kills what is left of it and starts a fresh one, so the server lives on.
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "proto/farm.pb.h"
#include "proto/tuning.pb.h"
#include "support/error.h"

namespace tensortune::device_server {

/// What a worker is told on its command line (never through the environment).
struct WorkerOptions {
  std::string device_key;  ///< stamped on every result
  /// Test-only faults by config index, "crash@3,hang@5,garbage@7": the worker crashes, hangs or
  /// answers NaN with NO_ERROR for those configs (the farm tests' misbehaving kernels);
  /// fast@N answers an impossibly fast time; gpu-fault@N and gpu-error@N answer what the GPU
  /// measurer reports for a kernel fault (the context lost) and a refused launch (not lost);
  /// hog@N allocates until allocation fails (at most 8 GiB), then answers as usual;
  /// cuda-fault@N and cuda-hang@N launch a kernel that faults or never ends on the worker's
  /// real GPU (gpu_faults.h), so the recovery from each runs on a GPU.
  std::string fault_inject;
  int gpu = -1;  ///< the GPU this worker measures CUDA templates on; -1: none (a CPU worker)
  /// Items whose operands and output need more bytes (ss::workload_bytes) are refused before
  /// any allocation (INSTANTIATION_ERROR naming both); 0: no limit.
  double max_work_bytes = 0;
  /// A CPU worker's address space is bounded to this many bytes (RLIMIT_AS), so that a
  /// measurement that allocates without end fails in the worker (an error result naming the
  /// limit) instead of waking the machine's OOM killer; 0: no bound. Not applied to GPU workers
  /// (the CUDA driver reserves far more address space than it uses) nor in sanitizer builds.
  double memory_limit_bytes = 0;
  /// A GPU worker given an item without a built kernel compiles it itself (old clients);
  /// without this such an item is a COMPILE_DEVICE error saying how to build it elsewhere.
  bool build_on_device = false;
  /// A CPU worker loads the object code an item carries (else it ignores it and compiles the
  /// config itself). A GPU worker always loads the cubin an item carries.
  bool accept_built_code = false;
  /// A builder's worker: builds each item's kernel (measure::build_kernel) and answers with it
  /// instead of measuring.
  bool builder = false;
};

/// Whether this build can bound a worker's address space (not under ASan or TSan, whose shadow
/// memory is reserved address space).
bool worker_memory_limit_supported();

/// The faults of WorkerOptions::fault_inject by config index; errors name the item.
Expected<std::map<int64_t, std::string>> parse_fault_injection(const std::string& spec);

class WorkerProcess {
 public:
  /// `executable` is the tensortune binary (its `device-worker` subcommand runs the loop).
  WorkerProcess(std::string executable, WorkerOptions options);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  Status start();
  /// Measures one item; never fails: every failure of the worker is a result.
  /// `deadline_s` bounds the whole answer (compile + check + timing).
  v1::MeasureResult measure(const v1::WorkItem& item, double deadline_s);
  pid_t pid() const { return pid_; }
  /// Workers started after the first (a crash, a hang or a GPU fault replaced the last).
  int restarts() const { return std::max(0, starts_.load() - 1); }

 private:
  void stop();
  std::string executable_;
  WorkerOptions options_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
  std::atomic<int> starts_{0};
};

/// The `device-worker` loop (stdin/stdout pipes); returns the process exit code.
int run_device_worker(const WorkerOptions& options);

}  // namespace tensortune::device_server
