// Generated depthwise_conv2d_NCHWc kernels compute what the plain grouped reference computes:
// every valid config of a small space (input and output blocks that differ included), and
// sampled configs over strides, dilation, padding and batches. The grouped reference itself is
// checked against single-channel convolutions of the ungrouped one.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "schedule_space/depthwise_conv2d_nchwc_template.h"
#include "schedule_space/task.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tt::Tensor;

namespace {

ss::Conv2dWorkload depthwise(int64_t c, int64_t h, int64_t w, int64_t k, int64_t stride,
                             std::array<int64_t, 4> pad, int64_t dil = 1) {
  ss::Conv2dWorkload d;
  d.in_channels = d.out_channels = d.groups = c;
  d.in_height = h;
  d.in_width = w;
  d.kernel_h = d.kernel_w = k;
  d.stride_h = d.stride_w = stride;
  d.pad_top = pad[0];
  d.pad_left = pad[1];
  d.pad_bottom = pad[2];
  d.pad_right = pad[3];
  d.dilation_h = d.dilation_w = dil;
  return d;
}

struct Checked {
  int configs = 0, blocks_differ = 0, blocks_do_not_nest = 0, kw_loops = 0;
};

/// Runs configs 0, step, 2 * step, ... that are valid and compares each with the reference.
Checked check_configs(const ss::Conv2dWorkload& w, int64_t step, bool bias) {
  Checked out;
  auto task = ss::make_task(ss::kDepthwiseConv2dNCHWc, w, tt::codegen::host_target());
  EXPECT_TRUE(task.has_value()) << task.error().message;
  if (!task) return out;
  auto space = ss::make_config_space(*task);
  const ss::OperandShapes shapes = ss::operand_shapes(w);
  tt::measure::OperatorInputs in{Tensor::zeros(shapes.data), Tensor::zeros(shapes.weight), {}};
  tt::fill_uniform(in.data, 21);
  tt::fill_uniform(in.weight, 22);
  if (bias) {
    in.bias = Tensor::zeros(shapes.bias);
    tt::fill_uniform(*in.bias, 23);
  }
  const Tensor want =
      tt::measure::conv2d_nchw_reference(in.data, in.weight, bias ? &*in.bias : nullptr, w);
  for (int64_t i = 0; i < space->size(); i += step) {
    const ss::Config c = *space->config_at(i);
    if (!space->is_valid(c)) continue;
    auto got = tt::measure::run_operator(*task, *space, c, in, 1 + (i % 3));
    EXPECT_TRUE(got.has_value()) << space->describe(c) << ": " << got.error().message;
    if (!got) return out;
    for (size_t j = 0; j < want.f32.size(); ++j) {
      EXPECT_NEAR(got->f32[j], want.f32[j], 1e-4 * (1 + std::fabs(want.f32[j])))
          << space->describe(c) << " element " << j;
      if (::testing::Test::HasFailure()) return out;
    }
    const ss::DepthwiseSchedule s = ss::depthwise_conv2d_nchwc_schedule(*space, c);
    ++out.configs;
    out.blocks_differ += s.ic_bn != s.oc_bn;
    out.blocks_do_not_nest += s.ic_bn % s.oc_bn != 0 && s.oc_bn % s.ic_bn != 0;
    out.kw_loops += !s.unroll_kw;
  }
  return out;
}

TEST(DepthwiseKernel, EveryValidConfigOfASmallSpaceMatchesTheReference) {
  // 24 channels (blocks 1, 2, 3, 4, 6, 8, 12, 24: some nest, as 4 and 12, some do not, as 8 and
  // 12), asymmetric padding.
  const Checked c = check_configs(depthwise(24, 6, 6, 3, 1, {1, 0, 2, 1}), 1, false);
  EXPECT_GT(c.configs, 200);
  EXPECT_GT(c.blocks_differ, 100);
  EXPECT_GT(c.blocks_do_not_nest, 20);
  EXPECT_GT(c.kw_loops, 100);
}

TEST(DepthwiseKernel, StrideTwoWithBiasMatchesTheReference) {
  const Checked c = check_configs(depthwise(32, 9, 10, 3, 2, {1, 1, 1, 1}), 7, true);
  EXPECT_GT(c.configs, 20);
}

TEST(DepthwiseKernel, DilationFiveByFiveAndBatchTwoMatchTheReference) {
  auto w = depthwise(16, 11, 9, 5, 1, {4, 2, 3, 4}, 2);
  w.batch = 2;
  EXPECT_GT(check_configs(w, 5, true).configs, 10);
}

TEST(DepthwiseKernel, TheTemplateServesOnlyDepthwiseConvolutions) {
  const ss::Template& t = ss::depthwise_conv2d_nchwc_template();
  EXPECT_TRUE(t.accepts(depthwise(8, 5, 5, 3, 1, {1, 1, 1, 1})));
  ss::Conv2dWorkload grouped = depthwise(8, 5, 5, 3, 1, {1, 1, 1, 1});
  grouped.groups = 4;  // two channels per group
  const tt::Status refused = t.accepts(grouped);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("groups = 4"), std::string::npos);
  // And the ungrouped templates refuse a depthwise workload.
  const ss::Template& direct = *ss::find_template(ss::kConv2dNCHWc);
  EXPECT_FALSE(direct.accepts(depthwise(8, 5, 5, 3, 1, {1, 1, 1, 1})));
  const auto serving = ss::templates_for(depthwise(8, 5, 5, 3, 1, {1, 1, 1, 1}), "llvm");
  ASSERT_EQ(serving.size(), 1u);
  EXPECT_EQ(serving[0], &t);
}

TEST(DepthwiseKernel, AutoTvmIndexOfAPublishedEntity) {
  // 32 channels 112x112 stride 1: [[-1, 8], [-1, 8], [-1, 14], true] is index 201 in AutoTVM
  // (divisors of 32 ascending, those of OW = 112 up to 64, unroll_kw [true, false]).
  auto task = ss::make_task(ss::kDepthwiseConv2dNCHWc, depthwise(32, 112, 112, 3, 1, {1, 1, 1, 1}),
                            tt::codegen::host_target());
  ASSERT_TRUE(task);
  const ss::ConfigSpace space = *ss::make_config_space(*task);
  EXPECT_EQ(space.size(), 6 * 6 * 9 * 2);
  const ss::Config c = *space.config_at(201);
  const ss::DepthwiseSchedule s = ss::depthwise_conv2d_nchwc_schedule(space, c);
  EXPECT_EQ(s.ic_bn, 8);
  EXPECT_EQ(s.oc_bn, 8);
  EXPECT_EQ(s.reg_n, 14);
  EXPECT_TRUE(s.unroll_kw);
}

// Blocks a network imposes (an int8 neighbour's 48 channels) get a row whose accumulators stay
// in registers: 16 vector registers with AVX2's 8 lanes, 32 with AVX-512's 16.
TEST(DepthwiseKernel, ABlocksFallbackRowKeepsItsAccumulatorsInRegisters) {
  const ss::Template& t = ss::depthwise_conv2d_nchwc_template();
  for (const auto& [lanes, budget] : {std::pair<int, int64_t>{8, 12}, {16, 28}}) {
    ss::Target target = tt::codegen::host_target();
    target.vector_lanes = lanes;
    auto task =
        ss::make_task(ss::kDepthwiseConv2dNCHWc, depthwise(96, 56, 56, 3, 1, {1, 1, 1, 1}), target);
    ASSERT_TRUE(task);
    const ss::ConfigSpace space = *ss::make_config_space(*task);
    for (int64_t block : {8, 16, 48, 96}) {
      const auto c = t.config_for_blocks(*task, space, block, block);
      ASSERT_TRUE(c.has_value()) << block;
      const ss::DepthwiseSchedule s = ss::depthwise_conv2d_nchwc_schedule(space, *c);
      const int64_t vectors = (block + lanes - 1) / lanes;
      EXPECT_EQ(s.oc_bn, block);
      EXPECT_LE(s.reg_n * vectors, budget) << lanes << " lanes, block " << block;
      // The widest such row that divides OW = 56, up to 8 columns.
      int64_t widest = 1;
      for (int64_t n = 8; n > 1 && widest == 1; --n)
        if (56 % n == 0 && n * vectors <= budget) widest = n;
      EXPECT_EQ(s.reg_n, widest) << lanes << " lanes, block " << block;
    }
  }
}

TEST(ReferenceOps, GroupedConvolutionIsOneConvolutionPerGroup) {
  // 6 -> 4 channels in 2 groups: group g's 2 outputs read its 3 inputs only.
  ss::Conv2dWorkload w = ss::square_conv2d(6, 5, 4, 3, 1);
  w.groups = 2;
  Tensor data = Tensor::zeros({1, 6, 5, 5}), weight = Tensor::zeros({4, 3, 3, 3});
  tt::fill_uniform(data, 31);
  tt::fill_uniform(weight, 32);
  const Tensor got = tt::measure::conv2d_nchw_reference(data, weight, nullptr, w);
  for (int64_t g = 0; g < 2; ++g) {
    ss::Conv2dWorkload one = ss::square_conv2d(3, 5, 2, 3, 1);
    Tensor d = Tensor::zeros({1, 3, 5, 5}), k = Tensor::zeros({2, 3, 3, 3});
    std::copy_n(data.f32.begin() + g * 75, 75, d.f32.begin());
    std::copy_n(weight.f32.begin() + g * 54, 54, k.f32.begin());
    const Tensor want = tt::measure::conv2d_nchw_reference(d, k, nullptr, one);
    for (size_t j = 0; j < want.f32.size(); ++j)
      EXPECT_FLOAT_EQ(got.f32[g * 50 + j], want.f32[j]) << "group " << g << " element " << j;
  }
}

}  // namespace
