// Kernels built apart from where they are timed: a CPU object built here computes what the JIT
// computes when a measurer loads it; a binary of another source, CPU or GPU architecture is
// refused before it is loaded; a cubin is NVRTC's for the target's arch, named by the digest of
// the very source the device makes of the config.
#include "compiler/measure/kernel_build.h"

#include <gtest/gtest.h>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/local_measurer.h"
#include "schedule_space/gpu_limits.h"
#include "support/sha256.h"

#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/cuda/nvrtc.h"
#endif

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

ss::Task conv_task(const std::string& target_spec, int lanes) {
  auto task = ss::make_task(ss::kConv2dNCHWc, ss::square_conv2d(16, 10, 32, 3, 1),
                            ss::Target{target_spec, lanes});
  EXPECT_TRUE(task) << task.error().message;
  return *task;
}

std::vector<ss::Config> some_valid(const ss::ConfigSpace& space, size_t count) {
  std::vector<ss::Config> out;
  // Spread over the space, not its first corner.
  const int64_t step = std::max<int64_t>(1, space.size() / 97);
  for (int64_t i = 0; i < space.size() && out.size() < count; i += step)
    if (space.is_valid_index(i)) out.push_back(*space.config_at(i));
  return out;
}

tt::measure::MeasureOptions quick() {
  tt::measure::MeasureOptions o;
  o.timing.number = 1;
  o.timing.repeat = 1;
  o.timing.min_repeat_ms = 0;
  return o;
}

TEST(KernelBuild, CpuObjectsBuiltHereAreCheckedAgainstTheReferenceWhenAMeasurerLoadsThem) {
  const ss::Task task =
      conv_task(tt::codegen::host_target().spec, tt::codegen::host_target().vector_lanes);
  const auto space = *ss::make_config_space(task);
  const auto configs = some_valid(space, 5);
  ASSERT_EQ(configs.size(), 5u);
  std::vector<ss::KernelBinary> built;
  for (const auto& c : configs) {
    auto b = tt::measure::build_kernel(task, space, c);
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(b->format, ss::KernelFormat::kCpuObject);
    EXPECT_EQ(b->arch, tt::codegen::host_cpu().cpu);
    EXPECT_EQ(b->code.substr(0, 4),
              "\x7f"
              "ELF");
    EXPECT_TRUE(tt::is_sha256_hex(b->source_sha256));
    EXPECT_EQ(b->compiler.rfind("LLVM ", 0), 0u) << b->compiler;
    built.push_back(std::move(b).value());
  }
  auto m = tt::measure::LocalMeasurer::create(task, quick());
  ASSERT_TRUE(m);
  std::vector<const ss::KernelBinary*> pointers;
  for (const auto& b : built) pointers.push_back(&b);
  // The measurer runs each loaded kernel once against the double-precision reference.
  const auto results = (*m)->measure_built(space, configs, pointers);
  for (const auto& r : results) EXPECT_TRUE(r.ok()) << r.error_msg;

  // Each object sent for its neighbour: refused by digest, nothing run.
  std::vector<const ss::KernelBinary*> shifted(pointers.begin() + 1, pointers.end());
  shifted.push_back(pointers.front());
  for (const auto& r : (*m)->measure_built(space, configs, shifted)) {
    EXPECT_EQ(r.error_no, ss::MeasureErrorNo::kCompileHost);
    EXPECT_NE(r.error_msg.find("compiled from another source"), std::string::npos) << r.error_msg;
  }
  // An invalid config is not built.
  for (int64_t i = 0; i < space.size(); ++i)
    if (!space.is_valid_index(i)) {
      auto b = tt::measure::build_kernel(task, space, *space.config_at(i));
      ASSERT_FALSE(b);
      EXPECT_EQ(b.error().code, tt::ErrorCode::kFailedPrecondition);
      break;
    }
}

TEST(KernelBuild, AnObjectForAnotherCpuUsesThatCpusFeaturesAndIsRefusedWhereOneLacks) {
  const tt::codegen::CpuDescription host = tt::codegen::host_cpu();
  if (host.triple.rfind("x86_64", 0) != 0) GTEST_SKIP() << "x86 CPU names: " << host.triple;
  // A CPU with a feature this one lacks (names this LLVM knows: znver4 came in LLVM 16).
  std::string other;
  for (const char* name : {"znver4", "sapphirerapids", "znver3", "alderlake", "znver1"}) {
    auto cpu = tt::codegen::cpu_for_target_spec(std::string("llvm -mcpu=") + name);
    if (!cpu) continue;
    if (name != host.cpu && !tt::codegen::missing_features(*cpu, host).empty()) {
      other = name;
      break;
    }
  }
  if (other.empty()) GTEST_SKIP() << host.cpu << " has every feature of the CPUs tried";
  const ss::Task task = conv_task("llvm -keys=cpu -mcpu=" + other, 8);
  const auto space = *ss::make_config_space(task);
  const ss::Config config = some_valid(space, 1).front();
  auto b = tt::measure::build_kernel(task, space, config);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->arch, other);
  auto m = tt::measure::LocalMeasurer::create(task, quick());
  ASSERT_TRUE(m);
  const auto r = (*m)->measure_built(space, {config}, {&*b}).front();
  EXPECT_EQ(r.error_no, ss::MeasureErrorNo::kCompileHost);
  EXPECT_NE(r.error_msg.find("lacks"), std::string::npos) << r.error_msg;

  auto unknown = tt::codegen::cpu_for_target_spec("llvm -keys=cpu -mcpu=notacpu9");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'notacpu9'"), std::string::npos)
      << unknown.error().message;
}

TEST(KernelBinary, ChecksNameTheFirstDifference) {
  ss::KernelBinary b;
  b.format = ss::KernelFormat::kCubin;
  b.arch = "sm_80";
  b.source_sha256 = tt::sha256_hex("a");
  b.built_by = "bob";
  auto format =
      ss::check_kernel_binary(b, ss::KernelFormat::kCpuObject, "znver4", {}, b.source_sha256);
  ASSERT_FALSE(format);
  EXPECT_NE(format.error().message.find("is a cubin (built by 'bob')"), std::string::npos)
      << format.error().message;
  auto arch = ss::check_kernel_binary(b, ss::KernelFormat::kCubin, "sm_90", {}, b.source_sha256);
  ASSERT_FALSE(arch);
  EXPECT_NE(arch.error().message.find("for sm_80"), std::string::npos) << arch.error().message;
  EXPECT_NE(arch.error().message.find("this GPU is sm_90"), std::string::npos);
  EXPECT_TRUE(ss::check_kernel_binary(b, ss::KernelFormat::kCubin, "sm_80", {}, b.source_sha256));
  EXPECT_FALSE(
      ss::check_kernel_binary(b, ss::KernelFormat::kCubin, "sm_80", {}, tt::sha256_hex("b")));
}

#ifdef TT_WITH_CUDA
TEST(KernelBuild, ACubinIsNvrtcsForTheTargetsArchAndNamesTheSourceTheDeviceMakes) {
  if (auto s = tt::codegen::cuda::nvrtc_available(); !s) GTEST_SKIP() << s.error().message;
  auto task = ss::make_task(ss::kDenseSmallBatchGpu, ss::DenseWorkload{1, 1000, 512},
                            ss::Target{ss::cuda_target_spec(90), 1});
  ASSERT_TRUE(task) << task.error().message;
  const auto space = *ss::make_config_space(*task);
  for (const ss::Config& c : some_valid(space, 3)) {
    auto b = tt::measure::build_kernel(*task, space, c);
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(b->format, ss::KernelFormat::kCubin);
    EXPECT_EQ(b->arch, "sm_90");
    EXPECT_EQ(b->code.substr(0, 4),
              "\x7f"
              "ELF");
    EXPECT_EQ(b->compiler.rfind("NVRTC ", 0), 0u) << b->compiler;
    auto source = tt::codegen::cuda::emit_cuda_kernel(*task, space, c);
    ASSERT_TRUE(source);
    EXPECT_EQ(b->source_sha256, tt::sha256_hex(source->source));
    EXPECT_TRUE(ss::check_kernel_binary(*b, ss::KernelFormat::kCubin, "sm_90", {},
                                        tt::sha256_hex(source->source)));
    EXPECT_FALSE(ss::check_kernel_binary(*b, ss::KernelFormat::kCubin, "sm_80", {},
                                         tt::sha256_hex(source->source)));
  }
  EXPECT_TRUE(tt::measure::can_build_kernels(*task));
}
#endif

}  // namespace
