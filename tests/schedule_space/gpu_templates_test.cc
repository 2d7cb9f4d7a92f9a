// The GPU templates' spaces against AutoTVM's published facts (../shared/RESEARCH.md 1.5) and
// their validity rules against a brute-force reading of each config.
#include <gtest/gtest.h>

#include "schedule_space/conv2d_cuda_template.h"
#include "schedule_space/conv2d_winograd_cuda_template.h"
#include "schedule_space/dense_cuda_template.h"
#include "schedule_space/depthwise_conv2d_cuda_template.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"

namespace ss = tensortune::schedule_space;

namespace {

ss::Task cuda_task(const std::string& name, const ss::Workload& w) {
  auto t = ss::make_task(name, w, ss::Target{ss::cuda_target_spec(80), 1});
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return *t;
}

const std::vector<int64_t>& sizes(const ss::KnobValue& v) {
  return std::get<std::vector<int64_t>>(v);
}

TEST(GpuTemplates, Conv2dNchwCudaSpacesHaveAutoTvmsSizesAndKnobOrder) {
  struct Case {
    int64_t co, ci, size, k, want;
  };
  // (CO, CI, OH = OW, kernel) of ResNet layers; sizes as AutoTVM prints len(ConfigSpace).
  for (const Case& c : {Case{512, 512, 7, 3, 844'800}, Case{256, 256, 14, 3, 9'123'840},
                        Case{128, 128, 28, 3, 36'864'000}, Case{64, 64, 56, 3, 90'316'800},
                        Case{2048, 512, 7, 1, 349'440}}) {
    ss::Conv2dWorkload w = ss::square_conv2d(c.ci, c.size, c.co, c.k, 1);
    auto space = *ss::make_config_space(cuda_task("conv2d_nchw.cuda", w));
    EXPECT_EQ(space.size(), c.want) << c.co << " " << c.ci << " " << c.size << " " << c.k;
  }
  auto space =
      *ss::make_config_space(cuda_task("conv2d_nchw.cuda", ss::square_conv2d(64, 56, 64, 3, 1)));
  std::vector<std::string> names;
  for (const ss::Knob& k : space.knobs()) names.push_back(k.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx",
                                      "auto_unroll_max_step", "unroll_explicit"}));
}

TEST(GpuTemplates, Conv2dNchwCudaValidityIsThreadsPerAxisSharedMemoryAndRegisters) {
  // A sample of every 13th config: 3x3 kernel over 8x8, 16 -> 128 channels, stride 1. tile_f's
  // thread factor runs along z, where a block has at most 64 threads (a launch with more fails).
  const ss::Conv2dWorkload w = ss::square_conv2d(16, 8, 128, 3, 1);
  const ss::Task task = cuda_task("conv2d_nchw.cuda", w);
  auto space = *ss::make_config_space(task);
  int64_t valid = 0, z_over = 0;
  for (int64_t i = 0; i < space.size(); i += 13) {
    const ss::Config c = *space.config_at(i);
    const auto e = space.entity_of(c);
    const auto& f = sizes(e[0].second);
    const auto& y = sizes(e[1].second);
    const auto& x = sizes(e[2].second);
    const int64_t rci = sizes(e[3].second)[1], ryi = sizes(e[4].second)[1],
                  rxi = sizes(e[5].second)[1];
    const int64_t threads = f[2] * y[2] * x[2];
    const int64_t acc = f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
    const int64_t ty = y[1] * y[2] * y[3], tx = x[1] * x[2] * x[3];
    const int64_t input = rci * (ty - 1 + ryi) * (tx - 1 + rxi);
    const int64_t weights = f[1] * f[2] * f[3] * rci * ryi * rxi;
    const bool want =
        threads <= 1024 && f[2] <= 64 && 4 * (input + weights) <= 48 * 1024 && acc <= 256;
    EXPECT_EQ(space.is_valid(c), want) << space.describe(c);
    valid += want;
    z_over += threads <= 1024 && f[2] > 64;
  }
  EXPECT_GT(valid, 0);
  EXPECT_GT(z_over, 0);  // the sample holds configs only the z limit refuses
  EXPECT_TRUE(space.is_valid(ss::default_config(task, space)));
}

TEST(GpuTemplates, DepthwiseCudaHasAutoTvmsKnobsAndServesOnlyDepthwiseConvolutions) {
  const ss::Conv2dWorkload dw =
      *ss::conv2d_workload({1, 32, 112, 112}, {32, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1});
  const ss::Task task = cuda_task("depthwise_conv2d_nchw.cuda", dw);
  auto space = *ss::make_config_space(task);
  std::vector<std::string> names;
  for (const ss::Knob& k : space.knobs()) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"tile_f", "tile_y", "tile_x", "auto_unroll_max_step",
                                             "unroll_explicit"}));
  // 4-way factorisations: of 32 = 2^5, C(8, 3) = 56; of 112 = 2^4 * 7, C(7, 3) * 4 = 140.
  EXPECT_EQ(space.size(), 56 * 140 * 140 * 3 * 2);
  EXPECT_EQ(std::get<int64_t>(space.knobs()[3].options[1]), 256);
  // Validity against a brute-force reading of a sample of configs.
  int64_t valid = 0;
  for (int64_t i = 0; i < space.size(); i += 997) {
    const ss::Config c = *space.config_at(i);
    const auto e = space.entity_of(c);
    const auto& f = sizes(e[0].second);
    const auto& y = sizes(e[1].second);
    const auto& x = sizes(e[2].second);
    const int64_t tf = f[1] * f[2] * f[3], ty = y[1] * y[2] * y[3], tx = x[1] * x[2] * x[3];
    const int64_t threads = f[2] * y[2] * x[2];
    const int64_t acc = f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
    const int64_t shared = 4 * (tf * (ty + 2) * (tx + 2) + tf * 9);
    const bool want = threads <= 1024 && f[2] <= 64 && shared <= 48 * 1024 && acc <= 256;
    EXPECT_EQ(space.is_valid(c), want) << space.describe(c);
    valid += want;
  }
  EXPECT_GT(valid, 0);
  EXPECT_TRUE(space.is_valid(ss::default_config(task, space)));
  // A grouped convolution that is not depthwise, and an ordinary one, are not its to run; the
  // direct template refuses the depthwise one.
  EXPECT_FALSE(ss::make_task("depthwise_conv2d_nchw.cuda", ss::square_conv2d(32, 56, 32, 3, 1),
                             ss::Target{ss::cuda_target_spec(80), 1}));
  EXPECT_FALSE(ss::make_task("conv2d_nchw.cuda", dw, ss::Target{ss::cuda_target_spec(80), 1}));
  EXPECT_EQ(ss::workload_key(task),
            "[\"depthwise_conv2d_nchw.cuda\", [[\"TENSOR\", [1, 32, 112, 112], \"float32\"], "
            "[\"TENSOR\", [32, 1, 3, 3], \"float32\"], [1, 1], [1, 1, 1, 1], [1, 1], "
            "\"float32\"]]");
}

TEST(GpuTemplates, WinogradCudaHasAutoTvmsKnobsTileRuleAndServesOnlyThreeByThreeStrideOne) {
  // ResNet's 3x3 layer at 56x56: height a multiple of 8, F(4x4, 3x3), 36 points, 14 x 14 tiles.
  const ss::Conv2dWorkload w = ss::square_conv2d(64, 56, 64, 3, 1);
  const ss::Task task = cuda_task("conv2d_nchw_winograd.cuda", w);
  auto space = *ss::make_config_space(task);
  std::vector<std::string> names;
  for (const ss::Knob& k : space.knobs()) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"tile_b", "tile_y", "tile_x", "tile_rc",
                                             "auto_unroll_max_step", "unroll_explicit"}));
  ASSERT_EQ(space.knobs()[0].options.size(), 1u);  // inner factors all 1
  EXPECT_EQ(sizes(space.knobs()[0].options[0]), (std::vector<int64_t>{-1, 1, 1, 1}));
  // 4-way factorisations: of 64 = 2^6, C(9, 3) = 84; of 196 = 2^2 * 7^2, C(5, 3)^2 = 100;
  // 2-way of 64: 7.
  EXPECT_EQ(space.size(), 84 * 100 * 7 * 3 * 2);
  EXPECT_EQ(std::get<int64_t>(space.knobs()[4].options[1]), 128);
  const ss::Config fallback = ss::default_config(task, space);
  EXPECT_TRUE(space.is_valid(fallback));
  const auto s = ss::conv2d_nchw_winograd_cuda_schedule(w, space, fallback);
  EXPECT_EQ(s.m, 4);
  EXPECT_EQ(s.points(), 36);
  EXPECT_LE(s.accumulators(), ss::kMaxCudaAccumulators);
  EXPECT_LE(s.shared_bytes(), 48 * 1024);
  // 28 is not a multiple of 8: F(2x2, 3x3).
  EXPECT_EQ(ss::winograd_cuda_tile(ss::square_conv2d(64, 28, 64, 3, 1)), 2);
  // Strided, 1x1 and grouped convolutions are not its to run.
  const ss::Target cuda{ss::cuda_target_spec(80), 1};
  EXPECT_FALSE(
      ss::make_task("conv2d_nchw_winograd.cuda", ss::square_conv2d(64, 56, 64, 3, 2), cuda));
  EXPECT_FALSE(
      ss::make_task("conv2d_nchw_winograd.cuda", ss::square_conv2d(64, 56, 64, 1, 1), cuda));
  // In a network the direct template is the default (the first registered, then the blocked
  // one); --no-winograd leaves this one out.
  std::vector<std::string_view> serving;
  for (const ss::Template* t : ss::templates_for(w, "cuda")) serving.push_back(t->name());
  EXPECT_EQ(serving, (std::vector<std::string_view>{"conv2d_nchw.cuda", "conv2d_NCHWc.cuda",
                                                    "conv2d_nchw_winograd.cuda"}));
  EXPECT_EQ(ss::templates_for(w, "cuda", ss::AlgorithmFilter{{"winograd"}}).size(), 2u);
}

TEST(GpuTemplates, ValidCountIsTheBruteForceCountAndCopiesShareIt) {
  const ss::Task task = cuda_task("conv2d_nchw.cuda", ss::square_conv2d(8, 6, 16, 3, 1));
  const ss::ConfigSpace space = *ss::make_config_space(task);
  int64_t valid = 0;
  for (int64_t i = 0; i < space.size(); ++i) valid += space.is_valid(*space.config_at(i));
  const ss::ConfigSpace copy = space;
  EXPECT_EQ(copy.valid_count(), valid);
  EXPECT_EQ(space.valid_count(), valid);
  EXPECT_LT(valid, space.size());  // some tiles are too large: the count is not the size
}

TEST(GpuTemplates, WorkloadKeysUseAutoTvmsArgumentLists) {
  const ss::Task conv = cuda_task("conv2d_nchw.cuda", ss::square_conv2d(64, 56, 64, 3, 1));
  EXPECT_EQ(ss::workload_key(conv),
            "[\"conv2d_nchw.cuda\", [[\"TENSOR\", [1, 64, 56, 56], \"float32\"], [\"TENSOR\", "
            "[64, 64, 3, 3], \"float32\"], [1, 1], [1, 1, 1, 1], [1, 1], \"float32\"]]");
  const ss::Task dense = cuda_task("dense_small_batch.gpu", ss::DenseWorkload{1, 1000, 512});
  EXPECT_EQ(ss::workload_key(dense),
            "[\"dense_small_batch.gpu\", [[\"TENSOR\", [1, 512], \"float32\"], [\"TENSOR\", "
            "[1000, 512], \"float32\"], null, \"float32\"]]");
}

TEST(GpuTemplates, DenseSmallBatchSplitsKAndFallsBackToSixtyFourThreads) {
  const ss::Task task = cuda_task("dense_small_batch.gpu", ss::DenseWorkload{1, 1000, 2048});
  auto space = *ss::make_config_space(task);
  EXPECT_EQ(space.size(), 12);  // divisors of 2048
  const ss::Config fallback = ss::default_config(task, space);
  EXPECT_EQ(sizes(space.value(fallback, "tile_k")), (std::vector<int64_t>{-1, 64}));
  // K = 3000 has no divisor 64: the largest divisor below it (60).
  const ss::Task odd = cuda_task("dense_small_batch.gpu", ss::DenseWorkload{1, 10, 3000});
  auto odd_space = *ss::make_config_space(odd);
  EXPECT_EQ(sizes(odd_space.value(ss::default_config(odd, odd_space), "tile_k")),
            (std::vector<int64_t>{-1, 60}));
}

TEST(GpuTemplates, DenseLargeBatchAppliesAutoTvmsFiltersAsMeant) {
  const ss::Task task = cuda_task("dense_large_batch.gpu", ss::DenseWorkload{1024, 1024, 1024});
  auto space = *ss::make_config_space(task);
  // Exponents (v, t, i) of 2 with v in 1..6, t in 3..6, v+t+i in {6, 7}: 6 + 10 = 16 entities.
  EXPECT_EQ(space.knobs()[0].options.size(), 16u);
  EXPECT_EQ(space.knobs()[1].options.size(), 16u);
  for (const ss::KnobValue& v : space.knobs()[2].options)
    EXPECT_GT(1024 / (sizes(v)[1] * sizes(v)[2]), 2) << ss::knob_value_to_string(v);
  EXPECT_TRUE(space.is_valid(ss::default_config(task, space)));
  // A batch of 16 cannot make a 64-row tile: that axis keeps its unfiltered candidates,
  // 4-way factorisations of 2^4 = C(7, 3) = 35.
  const ss::Task small = cuda_task("dense_large_batch.gpu", ss::DenseWorkload{16, 1024, 1024});
  auto small_space = *ss::make_config_space(small);
  EXPECT_EQ(small_space.knobs()[0].options.size(), 35u);
  EXPECT_TRUE(small_space.is_valid(ss::default_config(small, small_space)));
}

// AutoTVM's batch_matmul.cuda: tile_y, tile_x (3-way), tile_k (2-way), auto_unroll_max_step
// {8, 16, 32, 64}, unroll_explicit {0, 1}, so the space is |split3(M)| |split3(N)| |split2(K)| 4 2;
// its fallback: power-of-two blocks of at most 64 over at most 8 threads, 8 columns of k, 16, 0.
TEST(GpuTemplates, BatchMatmulCudaHasAutoTvmsKnobsSpaceAndFallback) {
  const ss::Task task =
      cuda_task("batch_matmul.cuda", ss::BatchMatmulWorkload{12, 128, 96, 64, true});
  auto space = *ss::make_config_space(task);
  std::vector<std::string> names;
  for (const auto& k : space.knobs()) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"tile_y", "tile_x", "tile_k", "auto_unroll_max_step",
                                             "unroll_explicit"}));
  // 128 = 2^7: C(9, 2) = 36 ordered 3-way splits; 96 = 2^5 3: C(7, 2) * 3 = 63; 64: 7 divisors.
  EXPECT_EQ(space.size(), 36 * 63 * 7 * 4 * 2);
  const ss::Config fallback = ss::default_config(task, space);
  EXPECT_EQ(sizes(space.value(fallback, "tile_y")), (std::vector<int64_t>{-1, 8, 8}));
  EXPECT_EQ(sizes(space.value(fallback, "tile_x")), (std::vector<int64_t>{-1, 8, 4}));
  EXPECT_EQ(sizes(space.value(fallback, "tile_k")), (std::vector<int64_t>{-1, 8}));
  EXPECT_EQ(std::get<int64_t>(space.value(fallback, "auto_unroll_max_step")), 16);
  EXPECT_EQ(std::get<int64_t>(space.value(fallback, "unroll_explicit")), 0);
  // Validity is the launch's: more than 1024 threads per block is invalid.
  for (int64_t i = 0; i < space.size(); i += 97) {
    const ss::Config c = *space.config_at(i);
    const int64_t threads = sizes(space.value(c, "tile_y"))[1] * sizes(space.value(c, "tile_x"))[1];
    if (threads > 1024) EXPECT_FALSE(space.is_valid(c)) << space.describe(c);
  }
}

TEST(GpuTemplates, LimitsNameTheFieldAndBothValues) {
  ss::GpuKernelUsage usage{512, 64 * 1024, 32};
  auto s = ss::check_gpu_limits(usage, ss::kUniversalGpuLimits);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message,
            "shared memory per block (bytes) = 65536 exceeds the device's limit of 49152");
  usage = {1024, 0, 128};
  s = ss::check_gpu_limits(usage, ss::kUniversalGpuLimits);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("registers per block = 131072"), std::string::npos);
  // Per axis: 128 threads along z fit the block's 1024 but not z's 64; a grid of 70000
  // blocks along y is too tall.
  s = ss::check_gpu_limits(ss::launch_usage({2, 2, 128}, {1, 1, 1}, 0), ss::kUniversalGpuLimits);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message, "threads along z = 128 exceeds the device's limit of 64");
  s = ss::check_gpu_limits(ss::launch_usage({32, 1, 1}, {1, 70000, 1}, 0), ss::kUniversalGpuLimits);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message, "blocks along y = 70000 exceeds the device's limit of 65535");
  EXPECT_FALSE(ss::fits_universal_limits(ss::launch_usage({2, 2, 128}, {1, 1, 1}, 0), 1));
  EXPECT_TRUE(ss::fits_universal_limits(ss::launch_usage({16, 1, 64}, {1, 1, 1}, 0), 1));
}

// Dynamic shared memory: what a block may opt into per architecture (the CUDA programming
// guide's table), checked with the static part, and refused naming both sums.
TEST(GpuTemplates, DynamicSharedMemoryIsCheckedAgainstTheArchitecturesOptInLimit) {
  EXPECT_EQ(ss::limits_for_capability(75).max_dynamic_shared_bytes_per_block, 64 * 1024);
  EXPECT_EQ(ss::limits_for_capability(80).max_dynamic_shared_bytes_per_block, 163 * 1024);
  EXPECT_EQ(ss::limits_for_capability(86).max_dynamic_shared_bytes_per_block, 99 * 1024);
  EXPECT_EQ(ss::limits_for_capability(89).max_dynamic_shared_bytes_per_block, 99 * 1024);
  EXPECT_EQ(ss::limits_for_capability(90).max_dynamic_shared_bytes_per_block, 227 * 1024);
  EXPECT_EQ(ss::limits_for_capability(120).max_dynamic_shared_bytes_per_block, 99 * 1024);
  // Static memory keeps its 48 KiB everywhere.
  EXPECT_EQ(ss::limits_for_capability(90).max_shared_bytes_per_block, 48 * 1024);
  const auto big = ss::launch_usage({128, 1, 1}, {1, 1, 1}, 0, 160 * 1024);
  EXPECT_FALSE(ss::fits_universal_limits(big, 1));
  EXPECT_TRUE(ss::fits_limits(big, 1, ss::limits_for_capability(80)));
  EXPECT_FALSE(ss::fits_limits(big, 1, ss::limits_for_capability(86)));
  EXPECT_TRUE(ss::check_gpu_limits(big, ss::limits_for_capability(90)).has_value());
  // The static part counts too: 4 KiB static and 160 KiB dynamic is over sm_80's 163 KiB.
  auto both = ss::check_gpu_limits(ss::launch_usage({128, 1, 1}, {1, 1, 1}, 4096, 160 * 1024),
                                   ss::limits_for_capability(80));
  ASSERT_FALSE(both.has_value());
  EXPECT_EQ(both.error().message,
            "static and dynamic shared memory per block (bytes) = 167936 exceeds the device's "
            "limit of 166912");
}

}  // namespace
