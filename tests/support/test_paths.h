#pragma once
// Test helper: a fresh path in the temp folder for a record DB, with no leftovers of an earlier
// run (the DB file and its WAL and shared-memory files are removed), and removed again when the
// test process exits, so that runs leave nothing behind (TT_KEEP_TEST_FILES=1 keeps them for a
// post-mortem).

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace tensortune::testing {

namespace detail {

inline void remove_db_files(const std::string& path) {
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path + suffix, ignored);
}

/// The paths handed out, removed when the process exits normally.
class DbPathsRemovedAtExit {
 public:
  void add(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    paths_.push_back(path);
  }
  ~DbPathsRemovedAtExit() {
    // A forked child that exits must not take its parent's files with it.
    if (::getpid() != owner_) return;
    if (const char* keep = std::getenv("TT_KEEP_TEST_FILES"); keep && *keep && *keep != '0') return;
    for (const auto& p : paths_) remove_db_files(p);
  }

 private:
  std::mutex mu_;
  std::vector<std::string> paths_;
  pid_t owner_ = ::getpid();
};

inline DbPathsRemovedAtExit& db_paths() {
  static DbPathsRemovedAtExit paths;
  return paths;
}

}  // namespace detail

inline std::string fresh_db_path(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path p =
      fs::temp_directory_path() / ("tt_" + name + "_" + std::to_string(::getpid()) + ".db");
  detail::remove_db_files(p.string());
  detail::db_paths().add(p.string());
  return p.string();
}

}  // namespace tensortune::testing
