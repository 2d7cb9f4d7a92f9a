// A template owns its whole path: outside schedule_space/, its emitter files
// (compiler/codegen/*/*_emitter.cc, *_emitters.cc), the tests and the benchmarks, no source file
// names a registered template or one of the name constants of schedule_space/task.h. The names
// come from the registry, so a new template is covered the day it is registered.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "schedule_space/template.h"
#include "tests/support/source_tree.h"

namespace tensortune::schedule_space {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = TT_SOURCE_DIR;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool may_name_templates(const fs::path& relative) {
  const std::string first = relative.begin()->string();
  if (first == "schedule_space" || first == "tests" || first == "bench") return true;
  const std::string file = relative.filename().string();
  return relative.string().starts_with("compiler/codegen/") &&
         (file.ends_with("_emitter.cc") || file.ends_with("_emitters.cc"));
}

TEST(TemplateNames, NoSourceOutsideTheTemplatesPathNamesOne) {
  ASSERT_TRUE(fs::exists(kRoot / "schedule_space" / "task.h")) << kRoot;
  std::vector<std::string> needles;
  for (const Template* t : all_templates()) needles.emplace_back(t->name());
  // The constants that spell the names (kConv2dNCHWc, ...), qualified as code outside the
  // namespace must (graph::OpKind::kConv2dNCHWc, an operator, is another thing).
  const std::string task_h = read(kRoot / "schedule_space" / "task.h");
  const std::regex constant(R"(inline constexpr char (k\w+)\[\])");
  for (auto it = std::sregex_iterator(task_h.begin(), task_h.end(), constant);
       it != std::sregex_iterator(); ++it)
    for (const char* ns : {"ss::", "schedule_space::"}) needles.push_back(ns + (*it)[1].str());
  ASSERT_GT(needles.size(), all_templates().size()) << "no name constants found in task.h";

  std::vector<std::string> found;
  const int scanned = testing::for_each_source_line(
      kRoot, may_name_templates,
      [&](const fs::path& relative, int number, const std::string& line) {
        for (const std::string& n : needles) {
          const size_t at = line.find(n);
          if (at == std::string::npos) continue;
          // A constant must match whole (ss::kDensePack is not ss::kDensePackFoo).
          const size_t end = at + n.size();
          if (n.find("::k") != std::string::npos && end < line.size() &&
              (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_'))
            continue;
          found.push_back(relative.string() + ":" + std::to_string(number) + ": " + n);
        }
      });
  EXPECT_GT(scanned, 100) << "the source tree was not found under " << kRoot;
  std::string all;
  for (const auto& f : found) all += "\n  " + f;
  EXPECT_TRUE(found.empty())
      << "these files name a template; ask the template or the registry instead "
         "(schedule_space/template.h):"
      << all;
}

}  // namespace
}  // namespace tensortune::schedule_space
