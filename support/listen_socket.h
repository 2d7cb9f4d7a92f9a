#pragma once
/// \file
/// The socket options of our HTTP listeners (the tracker's dashboard, the device's metrics).
/// cpp-httplib's default also sets SO_REUSEPORT, with which a second server binds a port that
/// is in use and silently takes part of its connections (two trackers, half the scrapes each).
/// SO_REUSEADDR alone lets a restarted server bind at once and refuses a port in use.

#include <sys/socket.h>

namespace tensortune {

inline void exclusive_listen_socket(int sock) {
  int yes = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

}  // namespace tensortune
