#pragma once
/// \file
/// One worker process of a device server: `tensortune device-worker`, spawned with pipes.
/// The worker builds and times one config at a time; if it crashes or hangs, this side
/// turns that into a result (RUNTIME_DEVICE naming the signal, RUN_TIMEOUT naming the time),
/// kills what is left of it and starts a fresh one, so the server lives on.
#include <sys/types.h>

#include <string>

#include "proto/tuning.pb.h"
#include "proto/farm.pb.h"
#include "support/error.h"

namespace tensortune::device {

class WorkerProcess {
 public:
  /// `executable` is the tensortune binary (its `device-worker` subcommand runs the loop).
  explicit WorkerProcess(std::string executable);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  Status start();
  /// Measures one item; never fails: every failure of the worker is a result.
  /// `deadline_s` bounds the whole answer (compile + check + timing).
  v1::MeasureResult measure(const v1::WorkItem& item, double deadline_s);
  pid_t pid() const { return pid_; }

 private:
  void stop();
  std::string executable_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
};

/// The `device-worker` loop (stdin/stdout pipes); returns the process exit code.
int run_device_worker();

}  // namespace tensortune::device
