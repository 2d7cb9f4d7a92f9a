#pragma once
/// \file
/// Private to tracker/: the tracker's HTTP port (`tracker --metrics-port`).
///   GET /metrics      Prometheus text format, open to scrapers (no token).
///   GET /             the live dashboard (dashboard_page.h), read-only.
///   GET /api/status   devices, queues, jobs with progress and ETA (JSON)
///   GET /api/curves   best GFLOPS against results of the most recently tuned tasks
///   GET /api/best     the archive's best records, ?workload=1x64x56x56&template=...
///   GET /api/errors   recent failed measurements, ?device=NAME
///   POST /login       token=... : a session cookie, for browsers
/// Everything but /metrics needs a client (or admin) credential of the tracker's tokens when it
/// has any: `Authorization: Bearer <token>` or the session cookie of a login. A tracker without
/// tokens serves this machine only, as its gRPC port (or the network with --insecure); one
/// that authenticates by client certificates serves /metrics only. HTTPS with the tracker's
/// --tls-cert. Unknown paths are 404; nothing a request holds can crash the tracker.
#include <memory>
#include <string>

#include "support/error.h"

namespace tensortune::tracker {

struct ServerCore;

class MonitorServer {
 public:
  /// Binds `host:port` (0: any free port) and serves from a thread of its own.
  static Expected<std::unique_ptr<MonitorServer>> start(ServerCore& core, const std::string& host,
                                                        int port);
  ~MonitorServer();
  int port() const;

  struct Impl;

 private:
  explicit MonitorServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortune::tracker
