#pragma once
/// \file
/// Runs the tensortune binary (TENSORTUNE_BINARY, set by CMake) as a user would, and captures
/// its exit code and its stdout and stderr together.
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tensortune::testing {

struct CmdResult {
  int exit_code;
  std::string output;
};

inline CmdResult run_tensortune(const std::string& args) {
  const std::string cmd = std::string(TENSORTUNE_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace tensortune::testing
