#pragma once
/// \file
/// The project's own C++ sources, line by line, for the tests that hold the tree to a rule by
/// grepping it (no template named outside its rooms, no target kind compared by name).
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

namespace tensortune::testing {

/// Calls `line_fn(relative path, line number, line)` for every line of every .cc and .h file
/// under `root`, leaving out hidden folders, build trees, node_modules and the files and folders
/// `skip` says to (given the path relative to `root`). Returns how many files it read.
inline int for_each_source_line(
    const std::filesystem::path& root,
    const std::function<bool(const std::filesystem::path&)>& skip,
    const std::function<void(const std::filesystem::path&, int, const std::string&)>& line_fn) {
  namespace fs = std::filesystem;
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path relative = fs::relative(it->path(), root);
    const std::string top = relative.begin()->string();
    if (it->is_directory() && (top.starts_with(".") || top.starts_with("build") ||
                               relative.filename() == "node_modules" || skip(relative))) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string ext = relative.extension().string();
    if (!it->is_regular_file() || (ext != ".cc" && ext != ".h") || skip(relative)) continue;
    ++files;
    std::ifstream in(it->path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) line_fn(relative, number, line);
  }
  return files;
}

}  // namespace tensortune::testing
