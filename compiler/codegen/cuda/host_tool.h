#pragma once
/// \file
/// Running a host tool (the C++ compiler for emulation, the toolkit's ptxas) on files in a
/// scratch directory. Internal to codegen/cuda.

#include <filesystem>
#include <string>
#include <vector>

#include "support/error.h"

namespace tensortune::codegen::cuda {

/// A fresh directory under the system's temporary directory, removed with everything in it
/// when this goes away.
class ScratchDir {
 public:
  /// `prefix` names it ("tt-emulate"); fails naming the parent when it cannot be made.
  static Expected<ScratchDir> create(const std::string& prefix);
  ScratchDir(ScratchDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ScratchDir& operator=(ScratchDir&&) = delete;
  ~ScratchDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  explicit ScratchDir(std::filesystem::path p) : path_(std::move(p)) {}
  std::filesystem::path path_;
};

/// What a tool run did: its exit code (127: the shell found no such program; -1: it could not
/// be run or did not exit) and what it printed on stdout and stderr together.
struct ToolRun {
  int exit_code = -1;
  std::string output;
};

/// Runs `argv` (each word quoted for the shell), its output collected through `log`.
ToolRun run_tool(const std::vector<std::string>& argv, const std::filesystem::path& log);

}  // namespace tensortune::codegen::cuda
