#include "compiler/codegen/cuda/host_tool.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tensortune::codegen::cuda {
namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

Expected<ScratchDir> ScratchDir::create(const std::string& prefix) {
  namespace fs = std::filesystem;
  std::string name = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(name.data()))
    return internal_error("cannot create a temporary directory under " +
                          fs::temp_directory_path().string());
  return ScratchDir(name);
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

ToolRun run_tool(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  std::string command;
  for (const std::string& word : argv) command += shell_quote(word) + " ";
  command += "> " + shell_quote(log.string()) + " 2>&1";
  const int status = std::system(command.c_str());
  ToolRun run;
  if (status != -1 && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  run.output = text.str();
  return run;
}

}  // namespace tensortune::codegen::cuda
