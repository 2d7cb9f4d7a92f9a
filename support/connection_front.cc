#include "support/connection_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "support/listen_socket.h"

namespace tensortune {

namespace {

using Clock = std::chrono::steady_clock;

// Bytes held per direction before the front stops reading that side.
constexpr size_t kBufferCap = 256 * 1024;

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::string address_of(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof text);
  else if (a.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, text, sizeof text);
  return text;
}

// A best-effort answer to a connection the front refuses or times out, then the close.
void answer_and_close(int fd, const char* status) {
  const std::string reply =
      std::string("HTTP/1.1 ") + status + "\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  [[maybe_unused]] ssize_t n = ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
  ::close(fd);
}

Expected<int> listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return invalid_argument("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    exclusive_listen_socket(fd);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      ::freeaddrinfo(found);
      set_nonblocking(fd);
      return fd;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return unavailable("cannot listen on " + host + ":" + service + ": " + why);
}

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

struct ConnectionFront::Impl {
  struct Connection {
    int client = -1, backend = -1;
    std::string address;
    std::string up, down;   // bytes waiting to go to the backend / to the client
    bool relaying = false;  // the backend is connected (plaintext: the headers were complete)
    bool client_done = false, backend_done = false;
    bool backend_shut = false;  // the client finished sending: so was the backend told
    Clock::time_point accepted;
  };

  FrontLimits limits;
  bool plaintext = true;
  int backend_port = 0;
  int listen_fd = -1;
  int port = 0;
  int wake[2] = {-1, -1};
  std::atomic<bool> stop{false};
  std::thread thread;
  std::list<Connection> connections;
  std::map<std::string, int> per_address;
  mutable std::mutex counts_mu;
  Counts counts;

  void count(bool refused) {
    std::lock_guard<std::mutex> lock(counts_mu);
    ++(refused ? counts.refused : counts.timed_out);
  }

  void close_connection(std::list<Connection>::iterator c) {
    if (c->client >= 0) ::close(c->client);
    if (c->backend >= 0) ::close(c->backend);
    if (--per_address[c->address] <= 0) per_address.erase(c->address);
    connections.erase(c);
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage from{};
      socklen_t len = sizeof from;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN: none left (or a transient error: the next poll retries)
      const std::string address = address_of(from);
      if (static_cast<int>(connections.size()) >= limits.connections ||
          per_address[address] >= limits.connections_per_address) {
        if (per_address[address] == 0) per_address.erase(address);
        answer_and_close(fd, "429 Too Many Requests");
        count(/*refused=*/true);
        continue;
      }
      ++per_address[address];
      Connection c;
      c.client = fd;
      c.address = address;
      c.accepted = Clock::now();
      connections.push_back(std::move(c));
      // Bytes of TLS cannot be read here: relay them at once.
      if (!plaintext && !open_backend(connections.back())) close_connection(--connections.end());
    }
  }

  bool open_backend(Connection& c) {
    c.backend = connect_loopback(backend_port);
    c.relaying = c.backend >= 0;
    return c.relaying;
  }

  // The request's headers are complete: tell the server who the client is, and relay.
  bool start_relaying(Connection& c) {
    const size_t line_end = c.up.find("\r\n");
    c.up.insert(line_end + 2, "X-Forwarded-For: " + c.address + "\r\n");
    return open_backend(c);
  }

  // Moves bytes one way; false when that side is finished (closed, or an error).
  static bool pump_read(int fd, std::string& into) {
    char buffer[16 * 1024];
    while (into.size() < kBufferCap) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n > 0) {
        into.append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
      return false;  // 0: the peer closed its side; < 0: an error
    }
    return true;
  }
  static bool pump_write(int fd, std::string& from) {
    while (!from.empty()) {
      const ssize_t n = ::send(fd, from.data(), from.size(), MSG_NOSIGNAL);
      if (n > 0) {
        from.erase(0, static_cast<size_t>(n));
        continue;
      }
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
    return true;
  }

  void run() {
    std::vector<pollfd> fds;
    std::vector<std::list<Connection>::iterator> owners;  // fds[i] for i >= 2, two per connection
    while (!stop) {
      fds.assign({{wake[0], POLLIN, 0}, {listen_fd, POLLIN, 0}});
      owners.clear();
      for (auto c = connections.begin(); c != connections.end(); ++c) {
        short client_events = 0, backend_events = 0;
        if (!c->client_done && c->up.size() < kBufferCap) client_events |= POLLIN;
        if (!c->down.empty()) client_events |= POLLOUT;
        if (c->relaying) {
          if (!c->backend_done && c->down.size() < kBufferCap) backend_events |= POLLIN;
          if (!c->up.empty()) backend_events |= POLLOUT;
        }
        // A side with nothing to wait for is left out (-1), so that a peer that hung up does not
        // wake every poll.
        fds.push_back({client_events ? c->client : -1, client_events, 0});
        fds.push_back({backend_events ? c->backend : -1, backend_events, 0});
        owners.push_back(c);
      }
      if (::poll(fds.data(), fds.size(), 250) < 0 && errno != EINTR) break;
      if (fds[1].revents & POLLIN) accept_all();
      const auto now = Clock::now();
      for (size_t i = 0; i < owners.size(); ++i) {
        auto c = owners[i];
        const short cr = fds[2 + 2 * i].revents, br = fds[3 + 2 * i].revents;
        bool alive = true;
        if (cr & (POLLHUP | POLLERR) && !(cr & POLLIN)) alive = false;  // the client is gone
        if (alive && (cr & POLLIN) && !pump_read(c->client, c->up)) c->client_done = true;
        if (alive && !c->relaying && !c->up.empty()) {
          if (c->up.find("\r\n\r\n") != std::string::npos) {
            alive = start_relaying(*c);
          } else if (c->up.size() > limits.max_header_bytes) {
            answer_and_close(c->client, "431 Request Header Fields Too Large");
            c->client = -1;
            alive = false;
          }
        }
        if (alive && c->relaying) {
          if ((br & (POLLIN | POLLHUP | POLLERR)) && !pump_read(c->backend, c->down))
            c->backend_done = true;
          if (!c->up.empty() && !pump_write(c->backend, c->up)) alive = false;
          if (c->client_done && c->up.empty() && !c->backend_shut) {
            ::shutdown(c->backend, SHUT_WR);
            c->backend_shut = true;
          }
        }
        if (alive && !c->down.empty() && !pump_write(c->client, c->down)) alive = false;
        // Finished: the server answered and closed, and the answer went out; or the client
        // left before its request was whole.
        if (alive && c->backend_done && c->down.empty()) alive = false;
        if (alive && c->client_done && !c->relaying) alive = false;
        if (alive) {
          const double age = std::chrono::duration<double>(now - c->accepted).count();
          const bool headers_late = !c->relaying && age > limits.header_deadline_s;
          if (headers_late || age > limits.lifetime_s) {
            if (headers_late) {
              answer_and_close(c->client, "408 Request Timeout");
              c->client = -1;
            }
            count(/*refused=*/false);
            alive = false;
          }
        }
        if (!alive) close_connection(c);
      }
      if (fds[0].revents & POLLIN) break;
    }
    while (!connections.empty()) close_connection(connections.begin());
  }
};

Expected<std::unique_ptr<ConnectionFront>> ConnectionFront::start(const std::string& host, int port,
                                                                  int backend_port, bool plaintext,
                                                                  FrontLimits limits) {
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  impl->plaintext = plaintext;
  impl->backend_port = backend_port;
  TT_ASSIGN_OR_RETURN(impl->listen_fd, listen_on(host, port));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
  impl->port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                                 : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  if (::pipe2(impl->wake, O_CLOEXEC) != 0) {
    ::close(impl->listen_fd);
    return internal_error(std::string("pipe: ") + std::strerror(errno));
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<ConnectionFront>(new ConnectionFront(std::move(impl)));
}

ConnectionFront::ConnectionFront(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ConnectionFront::~ConnectionFront() {
  impl_->stop = true;
  [[maybe_unused]] ssize_t n = ::write(impl_->wake[1], "x", 1);
  if (impl_->thread.joinable()) impl_->thread.join();
  ::close(impl_->listen_fd);
  ::close(impl_->wake[0]);
  ::close(impl_->wake[1]);
}

int ConnectionFront::port() const { return impl_->port; }

ConnectionFront::Counts ConnectionFront::counts() const {
  std::lock_guard<std::mutex> lock(impl_->counts_mu);
  return impl_->counts;
}

}  // namespace tensortune
