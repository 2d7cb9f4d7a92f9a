#pragma once
/// \file
/// Real processes on loopback for the farm tests and the farm benchmark: a tracker and device
/// servers started from the tensortune binary, killed with SIGKILL when asked.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tracker/tracker_client.h"

extern char** environ;

namespace tensortune::testing {

/// A child process; killed (SIGKILL) and reaped on destruction.
class Process {
 public:
  Process(const std::string& binary, const std::vector<std::string>& args, const std::string& log,
          const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv_s = {binary};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0)
      pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Process() { kill9(); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool alive() const { return pid_ > 0 && ::kill(pid_, 0) == 0; }
  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  /// The exit code once the process exits by itself within `timeout_s` (-1 when a signal
  /// ended it); nullopt while it still runs.
  std::optional<int> wait_exit(double timeout_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (pid_ > 0) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      if (std::chrono::steady_clock::now() > end) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = -1;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

/// Waits for a port file written by `tensortune tracker --port-file`; 0 on time-out.
inline int wait_for_port(const std::string& port_file, double timeout_s = 20) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (std::filesystem::exists(port_file)) {
      const std::string text = read_text(port_file);
      if (!text.empty()) return std::stoi(text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

/// Polls `done` every 20 ms until it holds; false when it still does not after `timeout_s`
/// (a deadline that only turns a hang into a failure, never a bound on speed).
inline bool wait_until(const std::function<bool()>& done, double timeout_s = 30) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

/// Polls the tracker until `count` devices are registered; false on time-out.
inline bool wait_for_devices(tracker::TrackerClient& client, int count, double timeout_s = 30) {
  return wait_until(
      [&] {
        auto s = client.status();
        return s && s->devices_size() == count;
      },
      timeout_s);
}

}  // namespace tensortune::testing
