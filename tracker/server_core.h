#pragma once
/// \file
/// Private to tracker/: what the tracker's gRPC services share. The archive, the dispatcher and
/// the options, token checks, and the request checks more than one service makes.
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"
#include "tracker/archive.h"
#include "tracker/credentials.h"
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

  /// Sets the credentials the tracker accepts (the named ones and the shared token's) and
  /// ends every session (a device's stream) whose token no longer maps to the same
  /// name with a role the session needs; returns how many it ended. A device that loses its
  /// stream is removed and its leased items re-queue on others, so nothing is lost.
  int set_credentials(std::vector<Credential> credentials);
  bool authenticated() const;

  /// A live call made under a credential, and how to end it.
  struct Session {
    std::string name, token;
    uint8_t roles = 0;  ///< the roles the call needed
    std::function<void()> end;
  };
  /// Registers a session for set_credentials to check; the returned id unregisters it.
  uint64_t add_session(Session session);
  void remove_session(uint64_t id);

  /// OK when no credential is configured, or the call carries "authorization: Bearer <token>"
  /// of a credential with one of `roles` (then `*who` is its name); UNAUTHENTICATED for no or
  /// an unknown token, PERMISSION_DENIED for a credential of another role (both logged with
  /// the peer, never with the token).
  grpc::Status authorize(const grpc::ServerContextBase& ctx, const char* rpc, uint8_t roles,
                         std::string* who = nullptr, std::string* token = nullptr) const;

  /// The dispatcher's Recorder: writes one result to the archive (errors are logged).
  void record(const std::shared_ptr<const void>& context, int index,
              const schedule_space::MeasureResult& result) const;

 private:
  mutable std::mutex credentials_mu_;
  std::vector<Credential> credentials_;   // guarded by credentials_mu_
  std::map<uint64_t, Session> sessions_;  // guarded by credentials_mu_
  uint64_t next_session_ = 1;
};

/// Device keys name queues and appear in tables and logs: 1-64 of [A-Za-z0-9._-].
grpc::Status check_device_key(const std::string& field, const std::string& key);
grpc::Status invalid_argument_status(const Error& e);

}  // namespace tensortune::tracker
