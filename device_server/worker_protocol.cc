#include "device_server/worker_protocol.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>

namespace tensortune::device_server {
namespace {

constexpr uint32_t kMaxFrame = 64 << 20;

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads exactly n bytes before the deadline.
ReadOutcome read_all(int fd, char* p, size_t n, std::chrono::steady_clock::time_point deadline,
                     bool forever) {
  while (n > 0) {
    int wait_ms = -1;
    if (!forever) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return ReadOutcome::kTimedOut;
      wait_ms = static_cast<int>(left.count());
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return ReadOutcome::kTimedOut;
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return ReadOutcome::kClosed;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return ReadOutcome::kOk;
}

}  // namespace

bool write_frame(int fd, const google::protobuf::MessageLite& message) {
  std::string body;
  if (!message.SerializeToString(&body)) return false;
  const uint32_t n = static_cast<uint32_t>(body.size());
  const char header[4] = {char(n & 0xff), char((n >> 8) & 0xff), char((n >> 16) & 0xff),
                          char((n >> 24) & 0xff)};
  return write_all(fd, header, 4) && write_all(fd, body.data(), body.size());
}

ReadOutcome read_frame(int fd, google::protobuf::MessageLite* message, double timeout_s) {
  const bool forever = timeout_s < 0;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(forever ? 0 : timeout_s));
  unsigned char header[4];
  if (auto o = read_all(fd, reinterpret_cast<char*>(header), 4, deadline, forever);
      o != ReadOutcome::kOk)
    return o;
  const uint32_t n = header[0] | (header[1] << 8) | (header[2] << 16) | (uint32_t(header[3]) << 24);
  if (n > kMaxFrame) return ReadOutcome::kMalformed;
  std::string body(n, '\0');
  if (auto o = read_all(fd, body.data(), n, deadline, forever); o != ReadOutcome::kOk) return o;
  return message->ParseFromString(body) ? ReadOutcome::kOk : ReadOutcome::kMalformed;
}

}  // namespace tensortune::device_server
