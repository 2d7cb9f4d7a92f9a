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
#include <optional>
#include <string>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"
#include "tracker/archive.h"
#include "tracker/archive_writer.h"
#include "tracker/credentials.h"
#include "tracker/dispatcher.h"
#include "tracker/metrics.h"
#include "tracker/quotas.h"
#include "tracker/tracker_server.h"

namespace tensortune::tracker {

/// What the archive needs to store a job's results, carried through the dispatcher as the
/// job's record context.
struct JobRecordInfo {
  int64_t task_id = 0;
  std::shared_ptr<const schedule_space::ConfigSpace> space;
  std::vector<schedule_space::Config> configs;
  std::string name;
  std::string client;  ///< the credential that submitted it (archived with every result)
};

/// Who made a call, once authorized.
struct Caller {
  std::string name;   ///< the credential's (token or certificate); empty without authentication
  std::string token;  ///< empty for a certificate or without authentication
  uint8_t roles = 0;
  std::string peer;  ///< gRPC's peer string, "ipv4:10.0.0.5:41234"
  /// The name quotas and fair share count under: the credential's, or "anonymous@HOST" when
  /// the tracker has no authentication (one account per host).
  std::string account() const;
};

struct ServerCore {
  explicit ServerCore(const TrackerOptions& o) : options(o), quotas(o.client_quota) {}
  TrackerOptions options;
  QuotaBook quotas;
  std::unique_ptr<TrackerMetrics> metrics = std::make_unique<TrackerMetrics>();
  std::unique_ptr<Archive> archive;
  std::unique_ptr<Dispatcher> dispatcher;
  /// Batches results into the archive (archive_writer.h). Declared after `archive`: it is
  /// destroyed first, committing what is queued.
  std::unique_ptr<ArchiveWriter> archive_writer;
  /// Set when the tracker serves the network without authentication (--insecure); every
  /// Status reply carries it, so that `tensortune status` shows it.
  std::string security_warning;

  /// Sets the credentials the tracker accepts (the named ones and the shared token's) and
  /// ends every session (a device's stream) whose token no longer maps to the same
  /// name with a role the session needs; returns how many it ended. A device that loses its
  /// stream is removed and its leased items re-queue on others, so nothing is lost.
  int set_credentials(std::vector<Credential> credentials);
  /// The named credentials plus the shared token's (options.token); refuses an empty set on a
  /// tracker that serves the network. Returns the sessions ended; on error the old set stays.
  Expected<int> reload_credentials(std::vector<Credential> named);
  /// Reloads options.tokens_file (SIGHUP, the ReloadCredentials call).
  Expected<int> reload_tokens_file();
  /// Named credentials accepted now.
  int credential_count() const;
  /// The credential whose token this is (compared in constant time), if any.
  std::optional<Credential> credential_for_token(const std::string& token) const;
  bool authenticated() const;

  /// A live call made under a credential, and how to end it. A session without a token (a
  /// certificate's) is never ended by set_credentials.
  struct Session {
    std::string name, token;
    uint8_t roles = 0;  ///< the roles the call needed
    std::function<void()> end;
  };
  /// Registers a session for set_credentials to check; the returned id unregisters it.
  uint64_t add_session(Session session);
  void remove_session(uint64_t id);

  /// OK when the caller's credential has one of `roles`, or when the tracker has no
  /// authentication. The credential is the verified client certificate's (with
  /// --tls-client-ca), else the call's "authorization: Bearer <token>". UNAUTHENTICATED for no
  /// or an unknown token or certificate, PERMISSION_DENIED for a credential of another role
  /// (both logged with the peer, never with the token). Fills `*caller` when given.
  grpc::Status authorize(const grpc::ServerContextBase& ctx, const char* rpc, uint8_t roles,
                         Caller* caller = nullptr) const;

  /// The dispatcher's Recorder: queues one result for the archive's next batch; `then` runs
  /// once that batch committed (errors are logged; `then` runs either way).
  void record(const std::shared_ptr<const void>& context, int index,
              const schedule_space::MeasureResult& result, const std::string& device,
              std::function<void()> then) const;

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
