// Where CUDA's libraries are looked for, and what an error says when none opens: checked with
// files planted where a toolkit and a Python environment keep them.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "compiler/codegen/cuda/library_search.h"

namespace cuda = tensortune::codegen::cuda;
namespace fs = std::filesystem;

namespace {

struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const std::string& value) : name(n) { setenv(n, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "not a shared object";
}

size_t position(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

}  // namespace

TEST(CudaLibrarySearch, LooksInTheVariableTheToolkitAndPythonEnvironmentsInThatOrder) {
  const fs::path root = fs::temp_directory_path() / ("tt-libsearch-" + std::to_string(getpid()));
  fs::remove_all(root);
  const fs::path named = root / "elsewhere/libtt_fake.so.1";
  const fs::path toolkit = root / "cuda/targets/x86_64-linux/lib/libtt_fake.so.1";
  const fs::path wheel = root / "venv/lib/python3.12/site-packages/nvidia/cu13/lib/libtt_fake.so.1";
  for (const fs::path& p : {named, toolkit, wheel}) touch(p);
  ScopedEnv var("TT_FAKE_LIBRARY", named.string());
  ScopedEnv home("CUDA_HOME", (root / "cuda").string());
  ScopedEnv venv("VIRTUAL_ENV", (root / "venv").string());

  const auto candidates = cuda::cuda_library_candidates("TT_FAKE_LIBRARY", {"libtt_fake.so.1"}, "");
  ASSERT_GE(candidates.size(), 4u);
  EXPECT_EQ(candidates[0], named.string());
  EXPECT_EQ(candidates[1], "libtt_fake.so.1");  // the loader's own search
  EXPECT_LT(position(candidates, toolkit.string()), position(candidates, wheel.string()));
  EXPECT_LT(position(candidates, wheel.string()), candidates.size());

  // None of them is a shared object: every candidate is named with dlopen's reason.
  const cuda::OpenedLibrary lib =
      cuda::open_cuda_library("TT_FAKE_LIBRARY", {"libtt_fake.so.1"}, "");
  EXPECT_EQ(lib.handle, nullptr);
  const std::string tried = lib.tried();
  for (const fs::path& p : {named, toolkit, wheel})
    EXPECT_NE(tried.find(p.string() + " ("), std::string::npos) << tried;
  EXPECT_NE(tried.find("libtt_fake.so.1 ("), std::string::npos) << tried;
  fs::remove_all(root);
}

TEST(CudaLibrarySearch, OpensTheFirstCandidateThatLoads) {
  // libm is on every machine: through the loader's search, after a variable naming nothing.
  ScopedEnv var("TT_FAKE_LIBRARY", "/nonexistent/libm.so.6");
  const cuda::OpenedLibrary lib = cuda::open_cuda_library("TT_FAKE_LIBRARY", {"libm.so.6"}, "");
  ASSERT_NE(lib.handle, nullptr) << lib.tried();
  EXPECT_EQ(lib.path, "libm.so.6");
  ASSERT_EQ(lib.failures.size(), 1u);
  EXPECT_NE(lib.failures[0].find("/nonexistent/libm.so.6 ("), std::string::npos);
}
