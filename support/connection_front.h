#pragma once
/// \file
/// A guard in front of an HTTP server whose threads a slow client could hold (cpp-httplib gives
/// each connection a thread of a small pool for as long as the client takes to send its
/// request: eight clients sending a header line every few seconds took every thread). The front
/// owns the public listening socket and relays each connection to the server on a loopback
/// port, under limits the server itself cannot apply:
///  - connections per client address (and in all); one more is answered 429 and closed;
///  - a plaintext request reaches the server only once its headers are complete, so a slow
///    client holds a buffer here, not a server thread; headers must arrive within a deadline
///    (408) and fit a size (431);
///  - every connection ends after a lifetime (what bounds a slow TLS client, whose bytes the
///    front cannot read, and a slow body).
/// The relayed first request carries `X-Forwarded-For: <client address>` (plaintext only).

#include <cstdint>
#include <memory>
#include <string>

#include "support/error.h"

namespace tensortune {

struct FrontLimits {
  int connections_per_address = 8;
  int connections = 512;
  double header_deadline_s = 10;
  double lifetime_s = 120;
  size_t max_header_bytes = 16 * 1024;
};

class ConnectionFront {
 public:
  /// Listens on host:port (0: any free port) with SO_REUSEADDR only (a port in use is
  /// refused), relaying to 127.0.0.1:backend_port. `plaintext`: the backend speaks HTTP without
  /// TLS, so request headers can be read (and waited for) here.
  static Expected<std::unique_ptr<ConnectionFront>> start(const std::string& host, int port,
                                                          int backend_port, bool plaintext,
                                                          FrontLimits limits = {});
  ~ConnectionFront();  ///< stops relaying and closes every connection
  ConnectionFront(const ConnectionFront&) = delete;
  ConnectionFront& operator=(const ConnectionFront&) = delete;

  int port() const;
  /// Connections refused (over a limit) and closed by a deadline, since the start.
  struct Counts {
    int64_t refused = 0, timed_out = 0;
  };
  Counts counts() const;

 private:
  struct Impl;
  explicit ConnectionFront(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortune
