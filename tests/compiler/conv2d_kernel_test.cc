// Generated conv2d_NCHWc kernels compute what the plain reference computes: every valid config
// of a small space, and sampled configs over strides, dilations and asymmetric padding.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "schedule_space/conv2d_nchwc_template.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tt::Tensor;

namespace {

ss::Conv2dWorkload conv(int64_t ic, int64_t h, int64_t w, int64_t oc, int64_t kh, int64_t kw,
                        int64_t stride, std::array<int64_t, 4> pad, int64_t dil = 1) {
  ss::Conv2dWorkload c;
  c.in_channels = ic;
  c.in_height = h;
  c.in_width = w;
  c.out_channels = oc;
  c.kernel_h = kh;
  c.kernel_w = kw;
  c.stride_h = c.stride_w = stride;
  c.pad_top = pad[0];
  c.pad_left = pad[1];
  c.pad_bottom = pad[2];
  c.pad_right = pad[3];
  c.dilation_h = c.dilation_w = dil;
  return c;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  for (size_t i = 0; i < got.f32.size(); ++i) {
    const double tol = 1e-4 * (1 + std::fabs(want.f32[i]));
    ASSERT_NEAR(got.f32[i], want.f32[i], tol) << what << " element " << i;
  }
}

/// Runs configs 0, step, 2 * step, ... (of those, only the ones that split their reduction when
/// `split_only`, or that prefetch weights when `prefetch_only`) and compares each with the
/// reference.
int check_configs(const ss::Conv2dWorkload& w, int64_t step, bool bias, bool split_only = false,
                  bool prefetch_only = false) {
  auto task = ss::make_task(ss::kConv2dNCHWc, w, tt::codegen::host_target());
  EXPECT_TRUE(task.has_value());
  auto space = ss::make_config_space(*task);
  EXPECT_TRUE(space.has_value());
  tt::measure::OperatorInputs in;
  in.data = Tensor::zeros({w.batch, w.in_channels, w.in_height, w.in_width});
  in.weight = Tensor::zeros({w.out_channels, w.in_channels, w.kernel_h, w.kernel_w});
  tt::fill_uniform(in.data, 11);
  tt::fill_uniform(in.weight, 12);
  if (bias) {
    in.bias = Tensor::zeros({w.out_channels});
    tt::fill_uniform(*in.bias, 13);
  }
  const Tensor want =
      tt::measure::conv2d_nchw_reference(in.data, in.weight, bias ? &*in.bias : nullptr, w);
  int checked = 0;
  for (int64_t i = 0; i < space->size(); i += step) {
    auto c = space->config_at(i);
    if (!space->is_valid(*c)) continue;
    const ss::Conv2dSchedule s = ss::conv2d_nchwc_schedule(*space, *c);
    if (split_only && !s.split_reduction) continue;
    if (prefetch_only && !s.prefetch_weights) continue;
    auto got = tt::measure::run_operator(*task, *space, *c, in, 1 + (i % 2));
    EXPECT_TRUE(got.has_value()) << (got ? "" : got.error().message);
    if (!got) return checked;
    expect_close(*got, want, space->describe(*c));
    if (::testing::Test::HasFatalFailure()) return checked;
    ++checked;
  }
  return checked;
}

TEST(Conv2dKernel, EveryConfigOfASmallSpaceMatchesReference) {
  // 8 -> 32 channels, 6x5 input, 3x3 kernel, asymmetric padding.
  const auto w = conv(8, 6, 5, 32, 3, 3, 1, {1, 0, 2, 1});
  const int n = check_configs(w, 1, false);
  EXPECT_GT(n, 100);
}

TEST(Conv2dKernel, Stride2AsymmetricSamePaddingMatchesReference) {
  // TF SAME_UPPER for in=9, k=3, s=2: total 2 -> (1, 1); in=8: total 1 -> (0, 1).
  EXPECT_GT(check_configs(conv(4, 8, 9, 16, 3, 3, 2, {0, 1, 1, 1}), 7, true), 10);
}

TEST(Conv2dKernel, DilationAndRectangularKernelMatchReference) {
  EXPECT_GT(check_configs(conv(6, 11, 10, 12, 3, 2, 1, {2, 1, 2, 0}, 2), 5, false), 10);
}

TEST(Conv2dKernel, OneByOneStride2MatchesReference) {
  EXPECT_GT(check_configs(conv(16, 9, 9, 32, 1, 1, 2, {0, 0, 0, 0}), 3, true), 10);
}

TEST(Conv2dKernel, BatchTwoAndLargePaddingMatchReference) {
  auto w = conv(3, 5, 5, 8, 5, 5, 1, {3, 2, 2, 4});
  w.batch = 2;
  EXPECT_GT(check_configs(w, 5, true), 5);
}

// Slices of input channels over several row tiles, partial sums between them: slices of unequal
// size, tail rows and columns, padding, bias, one and two threads.
TEST(Conv2dKernel, SplitReductionsMatchReference) {
  const auto three = conv(80, 9, 7, 32, 3, 3, 1, {1, 1, 1, 0});
  EXPECT_GT(check_configs(three, 23, true, /*split_only=*/true), 8);
  const auto one = conv(300, 7, 7, 48, 1, 1, 1, {0, 0, 0, 0});
  EXPECT_GT(check_configs(one, 31, false, /*split_only=*/true), 8);
}

// Weights of 4 MiB and more may be prefetched a chunk ahead (past the last chunk, past the
// buffer's end): the answer is the same; smaller weights have no such knob.
TEST(Conv2dKernel, PrefetchingWeightsChangesNoValue) {
  const auto big = conv(512, 4, 4, 256, 3, 3, 1, {1, 1, 1, 1});  // 4.5 MiB of weights
  // Every 499th config: enough prefetching ones on 8 lanes (AVX2) as on 16.
  EXPECT_GT(check_configs(big, 499, true, false, /*prefetch_only=*/true), 5);
  const auto small = conv(256, 4, 4, 256, 3, 3, 1, {1, 1, 1, 1});  // 2.25 MiB
  auto task = *ss::make_task(ss::kConv2dNCHWc, small, tt::codegen::host_target());
  EXPECT_LT(ss::make_config_space(task)->knob_position("prefetch_weights"), 0);
}

// Where a chunk's weights fit in one slice, splitting is not a config of its own.
TEST(Conv2dKernel, ASplitOfOneSliceIsInvalid) {
  const auto w = conv(8, 6, 5, 32, 3, 3, 1, {1, 0, 2, 1});
  auto task = *ss::make_task(ss::kConv2dNCHWc, w, tt::codegen::host_target());
  auto space = *ss::make_config_space(task);
  int split = 0;
  for (int64_t i = 0; i < space.size(); ++i) {
    auto c = *space.config_at(i);
    split += space.is_valid(c) && ss::conv2d_nchwc_schedule(space, c).split_reduction;
  }
  EXPECT_EQ(split, 0);
  const auto big = conv(80, 9, 7, 32, 3, 3, 1, {1, 1, 1, 0});
  const ss::Conv2dSchedule s{8, 16, 7, 1, false, false, true};
  const ss::ReductionSlicing r = ss::reduction_slicing(big, s);
  // 8 x 3 x 3 x 16 floats (4.5 KiB) a chunk: three chunks of ten per 16 KiB slice.
  EXPECT_EQ(r.chunks_per_slice, 3);
  EXPECT_EQ(r.slices, 4);
  EXPECT_EQ(r.tasks, 2 * r.row_groups);
}

TEST(Conv2dKernel, BiasAndReluEpilogue) {
  const auto w = conv(4, 5, 5, 16, 3, 3, 1, {1, 1, 1, 1});
  auto task = *ss::make_task(ss::kConv2dNCHWc, w, tt::codegen::host_target());
  auto space = *ss::make_config_space(task);
  tt::measure::OperatorInputs in;
  in.data = Tensor::zeros({1, 4, 5, 5});
  in.weight = Tensor::zeros({16, 4, 3, 3});
  in.bias = Tensor::zeros({16});
  tt::fill_uniform(in.data, 1);
  tt::fill_uniform(in.weight, 2);
  tt::fill_uniform(*in.bias, 3);
  Tensor want = tt::measure::conv2d_nchw_reference(in.data, in.weight, &*in.bias, w);
  for (float& v : want.f32) v = std::max(v, 0.0f);
  tt::codegen::KernelOptions opt;
  opt.relu = true;
  auto got = tt::measure::run_operator(task, space, ss::default_config(task, space), in, 1, opt);
  ASSERT_TRUE(got.has_value());
  expect_close(*got, want, "relu");
}

TEST(Conv2dKernel, InvalidConfigIsRefused) {
  const auto w = conv(16, 16, 16, 64, 3, 3, 1, {1, 1, 1, 1});
  auto task = *ss::make_task(ss::kConv2dNCHWc, w, tt::codegen::host_target());
  auto space = *ss::make_config_space(task);
  for (int64_t i = 0; i < space.size(); ++i) {
    auto c = *space.config_at(i);
    if (space.is_valid(c)) continue;
    auto k = tt::codegen::compile_kernel(task, space, c);
    ASSERT_FALSE(k.has_value());
    EXPECT_EQ(k.error().code, tt::ErrorCode::kFailedPrecondition);
    EXPECT_NE(k.error().message.find("register tile"), std::string::npos) << k.error().message;
    return;
  }
  FAIL() << "the space has no invalid config";
}

}  // namespace
