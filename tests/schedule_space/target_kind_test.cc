// Target kinds: the `--target` forms each takes, the lanes its tasks carry, its device keys,
// every template's backend a registered kind; and no source outside a kind's rooms tells kinds
// apart by comparing their names.
#include "schedule_space/target_kind.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "schedule_space/task.h"
#include "schedule_space/template.h"
#include "tests/support/source_tree.h"

namespace tensortune::schedule_space {
namespace {

namespace fs = std::filesystem;

TEST(TargetKinds, FlagsParseIntoTheirKindsSpec) {
  struct Case {
    const char* text;
    const char* kind;
    const char* spec;
  };
  for (const Case& c :
       {Case{"", "llvm", "llvm"}, Case{"llvm", "llvm", "llvm"},
        Case{"cuda", "cuda", "cuda -arch=sm_80"}, Case{"cuda-sm90", "cuda", "cuda -arch=sm_90"},
        Case{"cuda -arch=sm_86", "cuda", "cuda -arch=sm_86"}}) {
    auto flag = parse_target_flag(c.text);
    ASSERT_TRUE(flag) << c.text << ": " << flag.error().message;
    EXPECT_EQ(flag->kind->name(), c.kind) << c.text;
    EXPECT_EQ(flag->spec, c.spec) << c.text;
  }
  auto rocm = parse_target_flag("rocm");
  ASSERT_FALSE(rocm);
  EXPECT_EQ(rocm.error().message,
            "--target = 'rocm' is not llvm, cuda, cuda-smXY or 'cuda -arch=sm_XY'");
  auto bad_arch = parse_target_flag("cuda-smXY");
  ASSERT_FALSE(bad_arch) << "a cuda form with no number is the cuda kind's error, not a miss";
  EXPECT_NE(bad_arch.error().message.find("--target = 'cuda-smXY': "), std::string::npos)
      << bad_arch.error().message;
}

TEST(TargetKinds, EachKindSaysWhereItRunsWhichLanesAndWhichKey) {
  const TargetKind* llvm = find_target_kind("llvm");
  const TargetKind* cuda = find_target_kind("cuda");
  ASSERT_TRUE(llvm && cuda);
  EXPECT_EQ(find_target_kind("opencl"), nullptr);
  EXPECT_EQ(all_target_kinds().front(), llvm) << "the default kind";
  EXPECT_FALSE(llvm->runs_on_gpu());
  EXPECT_TRUE(cuda->runs_on_gpu());
  for (int lanes : {4, 8, 16}) EXPECT_TRUE(llvm->check_vector_lanes(lanes)) << lanes;
  EXPECT_FALSE(llvm->check_vector_lanes(1));
  EXPECT_TRUE(cuda->check_vector_lanes(1));
  EXPECT_EQ(cuda->check_vector_lanes(8).error().message,
            "target.vector_lanes = 8, must be 1 for a cuda target");
  EXPECT_EQ(cuda->device_key(Target{"cuda -arch=sm_90", 1}), "cuda-sm90");
  EXPECT_EQ(llvm->device_key(Target{"llvm -keys=cpu", 16}), std::nullopt)
      << "the host's key is the code generator's to read";
  EXPECT_EQ(&target_kind_of(Target{"cuda -arch=sm_80", 1}), cuda);
  auto unknown = target_kind_of_spec("vulkan -device=x");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("llvm, cuda"), std::string::npos);
}

TEST(TargetKinds, EveryTemplatesBackendIsAKind) {
  for (const Template* t : all_templates()) {
    const TargetKind* kind = find_target_kind(t->backend());
    ASSERT_NE(kind, nullptr) << t->name() << ": backend " << t->backend();
    EXPECT_EQ(&t->target_kind(), kind);
  }
}

// The registry's rooms (schedule_space/: the kinds, the template registry, CUDA's limits), the
// tests and the benchmarks may spell a kind's name in a comparison; nothing else.
TEST(TargetKinds, NoSourceOutsideTheKindsComparesAKindsName) {
  const fs::path root = TT_SOURCE_DIR;
  std::string names;
  for (const TargetKind* k : all_target_kinds())
    names += (names.empty() ? "" : "|") + std::string(k->name());
  const std::regex compare("(==|!=)\\s*\"(" + names + ")\"|\"(" + names +
                           ")\"\\s*(==|!=)|starts_with\\(\"(" + names + ")");
  std::vector<std::string> found;
  const int scanned = testing::for_each_source_line(
      root,
      [](const fs::path& relative) {
        const std::string top = relative.begin()->string();
        return top == "tests" || top == "bench" || top == "schedule_space";
      },
      [&](const fs::path& relative, int number, const std::string& line) {
        if (std::regex_search(line, compare))
          found.push_back(relative.string() + ":" + std::to_string(number) + ": " + line);
      });
  EXPECT_GT(scanned, 100) << "the tree was not found at " << root;
  std::string listing;
  for (const auto& f : found) listing += f + "\n";
  EXPECT_TRUE(found.empty()) << "ask the target kind (schedule_space/target_kind.h) instead:\n"
                             << listing;
}

}  // namespace
}  // namespace tensortune::schedule_space
