#pragma once
/// \file
/// The tracker process: the DeviceLink service (device_link_service.h) and the Tracker service
/// (tuning_service.h) over one ServerCore (server_core.h: Dispatcher, Archive, token checks),
/// the gRPC health service, TLS and message-size limits, and a housekeeping thread that
/// expires leases and silent devices and fails jobs left without devices.
#include <memory>
#include <string>

#include "support/error.h"
#include "tracker/credentials.h"
#include "tracker/dispatcher.h"

namespace tensortune::tracker {

struct TrackerOptions {
  /// Without a token the tracker serves only this machine (loopback) unless `insecure`: anyone
  /// who can reach an open tracker can register a fake device (and receive other teams'
  /// workloads, or return timings that become "best" records) or flood its queues.
  std::string host = "127.0.0.1";
  /// Accept a non-loopback `host` without a token or credentials (warned at start-up and in every
  /// Status).
  bool insecure = false;
  int port = 9190;  ///< 0: any free port (see TrackerServer::port)
  std::string db_path = "tracker.db";
  std::string token;  ///< the shared token (one device+client credential); empty: none
  std::vector<Credential> credentials;  ///< named tokens (--tokens-file)
  /// The file `credentials` came from: what SIGHUP and the admin ReloadCredentials call read.
  std::string tokens_file;
  std::string tls_cert, tls_key;  ///< PEM files; both or neither
  /// PEM CA file: mutual TLS. Every caller must present a certificate it signed; the
  /// certificate's CN is the caller's name and its O values its roles (credentials.h).
  /// Excludes tokens (one way of authenticating per tracker).
  std::string tls_client_ca;
  /// Every client's quota, unless its credential says otherwise (quotas.h). Default: none.
  Quota client_quota;
  /// The HTTP port of the dashboard and of /metrics (monitor_server.h); -1: none, 0: any free.
  int metrics_port = -1;
  /// Its address; empty: the tracker's host. Without tokens, a non-loopback address needs
  /// `insecure`, as the gRPC port does.
  std::string metrics_host;
  int max_message_bytes = 4 << 20;
  /// A job fails with UNAVAILABLE when no device of its key has been registered for this long
  /// (AutoTVM's tracker waits forever; a job on a misspelt key should not).
  double no_device_timeout_s = 60;
  DispatcherOptions dispatcher;
};

/// Whether `host` names this machine only: 127.0.0.0/8, ::1 or localhost.
bool is_loopback_host(const std::string& host);

class TrackerServer {
 public:
  /// Opens the archive and binds; fails naming the file or the address, and refuses a
  /// non-loopback host without a token unless `insecure`.
  static Expected<std::unique_ptr<TrackerServer>> start(const TrackerOptions& options);
  ~TrackerServer();

  /// The port actually bound (not the one asked for when that was 0).
  int port() const;
  /// The dashboard's and /metrics' port actually bound; -1 without options.metrics_port.
  int metrics_port() const;
  /// Replaces the named credentials (the shared token stays), as SIGHUP does with the tokens
  /// file: sessions of revoked or demoted credentials end at once (a device's leased items
  /// re-queue elsewhere; a client's running jobs fail with PERMISSION_DENIED, their leased
  /// items still archived). Returns how many sessions ended; on error the old set stays.
  Expected<int> reload_credentials(std::vector<Credential> named);
  /// Reads options.tokens_file again and reloads it as above (SIGHUP, the admin RPC).
  Expected<int> reload_tokens_file();
  /// Blocks until shutdown() is called from another thread or a signal handler thread.
  void wait();
  void shutdown();

  struct Impl;

 private:
  explicit TrackerServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortune::tracker
