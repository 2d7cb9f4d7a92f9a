#pragma once
/// \file
/// Private to tracker/: what the tracker's gRPC services share. The archive, the dispatcher and
/// the options, token checks, and the request checks more than one service makes.
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <memory>
#include <string>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"
#include "tracker/archive.h"
#include "tracker/dispatcher.h"
#include "tracker/tracker_server.h"

namespace tensortune::tracker {

/// What the archive needs to store a job's results, carried through the dispatcher as the
/// job's record context.
struct JobRecordInfo {
  int64_t task_id = 0;
  std::shared_ptr<const schedule_space::ConfigSpace> space;
  std::vector<schedule_space::Config> configs;
  std::string name;
};

struct ServerCore {
  TrackerOptions options;
  std::unique_ptr<Archive> archive;
  std::unique_ptr<Dispatcher> dispatcher;
  /// Set when the tracker serves the network without authentication (--insecure); every
  /// Status reply carries it, so that `tensortune status` shows it.
  std::string security_warning;

  /// OK when no token is configured or the call carries "authorization: Bearer <token>";
  /// UNAUTHENTICATED (logged with the peer) otherwise.
  grpc::Status authorize(const grpc::ServerContextBase& ctx, const char* rpc) const;
  /// The dispatcher's Recorder: writes one result to the archive (errors are logged).
  void record(const std::shared_ptr<const void>& context, int index,
              const schedule_space::MeasureResult& result) const;
};

/// Device keys name queues and appear in tables and logs: 1-64 of [A-Za-z0-9._-].
grpc::Status check_device_key(const std::string& field, const std::string& key);
grpc::Status invalid_argument_status(const Error& e);

}  // namespace tensortune::tracker
