#pragma once
// Test helper: a fresh path in the temp folder for a record DB, with no leftovers of an earlier
// run (the DB file and its WAL and shared-memory files are removed).

#include <unistd.h>

#include <filesystem>
#include <string>

namespace tensortune::testing {

inline std::string fresh_db_path(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path p =
      fs::temp_directory_path() / ("tt_" + name + "_" + std::to_string(::getpid()) + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(p.string() + suffix);
  return p.string();
}

}  // namespace tensortune::testing
