// The Winograd template: its matrices compute a correlation exactly (in double), its kernels
// compute what the plain direct reference computes for every tile size, odd shape, padding,
// batch and epilogue, their float32 error on ResNet layers stays within the goal, and layers
// it cannot serve are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "schedule_space/conv2d_winograd_template.h"
#include "schedule_space/task.h"
#include "schedule_space/winograd_transform.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tt::Tensor;

namespace {

ss::Conv2dWorkload conv3x3(int64_t batch, int64_t ic, int64_t h, int64_t w, int64_t oc,
                           std::array<int64_t, 4> pad) {
  ss::Conv2dWorkload c;
  c.batch = batch;
  c.in_channels = ic;
  c.in_height = h;
  c.in_width = w;
  c.out_channels = oc;
  c.kernel_h = c.kernel_w = 3;
  c.pad_top = pad[0];
  c.pad_left = pad[1];
  c.pad_bottom = pad[2];
  c.pad_right = pad[3];
  return c;
}

struct Inputs {
  tt::measure::OperatorInputs in;
  Tensor want;
};

Inputs make_inputs(const ss::Conv2dWorkload& w, bool bias) {
  Inputs r;
  r.in.data = Tensor::zeros({w.batch, w.in_channels, w.in_height, w.in_width});
  r.in.weight = Tensor::zeros({w.out_channels, w.in_channels, 3, 3});
  tt::fill_uniform(r.in.data, 21);
  tt::fill_uniform(r.in.weight, 22);
  if (bias) {
    r.in.bias = Tensor::zeros({w.out_channels});
    tt::fill_uniform(*r.in.bias, 23);
  }
  r.want =
      tt::measure::conv2d_nchw_reference(r.in.data, r.in.weight, bias ? &*r.in.bias : nullptr, w);
  return r;
}

/// The config of the space with these knob values (the rest as the default has them).
ss::Config config_with(const ss::ConfigSpace& space, const ss::Config& base, int m, int64_t ic_bn,
                       int64_t oc_bn, int64_t reg_t, int64_t block_t, int64_t oc_split = 1,
                       int64_t prefetch = 0) {
  ss::Entity e = space.entity_of(base);
  for (auto& [name, value] : e) {
    if (name == "tile_m") value = int64_t{m};
    if (name == "tile_ic") value = std::vector<int64_t>{-1, ic_bn};
    if (name == "tile_oc") value = std::vector<int64_t>{-1, oc_bn};
    if (name == "reg_t") value = reg_t;
    if (name == "block_t") value = block_t;
    if (name == "oc_split") value = oc_split;
    if (name == "prefetch") value = prefetch;
  }
  auto c = space.config_from_entity(e);
  EXPECT_TRUE(c.has_value()) << c.error().message;
  return *c;
}

/// max |got - want| / max |want|: the relative error the goal is stated in.
double relative_error(const Tensor& got, const Tensor& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.f32.size(); ++i) {
    err = std::max(err, std::fabs(double(got.f32[i]) - want.f32[i]));
    scale = std::max(scale, std::fabs(double(want.f32[i])));
  }
  return err / scale;
}

TEST(WinogradMatrices, ComputeTheCorrelationExactlyInDouble) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int m : ss::kWinogradTiles) {
    const ss::WinogradMatrices& t = ss::winograd_matrices(m);
    ASSERT_EQ(t.alpha, m + 2);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> d(t.alpha), g(3);
      for (double& x : d) x = u(gen);
      for (double& x : g) x = u(gen);
      std::vector<double> gg(t.alpha, 0), bd(t.alpha, 0);
      for (int a = 0; a < t.alpha; ++a) {
        for (int k = 0; k < 3; ++k) gg[a] += t.g[a * 3 + k] * g[k];
        for (int k = 0; k < t.alpha; ++k) bd[a] += t.bt[a * t.alpha + k] * d[k];
      }
      for (int i = 0; i < m; ++i) {
        double y = 0, want = 0;
        for (int a = 0; a < t.alpha; ++a) y += t.at[i * t.alpha + a] * gg[a] * bd[a];
        for (int k = 0; k < 3; ++k) want += d[i + k] * g[k];
        ASSERT_NEAR(y, want, 1e-12) << "F(" << m << ",3) output " << i;
      }
    }
  }
}

TEST(WinogradKernel, EveryTileSizeMatchesTheReferenceOnOddShapesAndPadding) {
  // Outputs that no m divides, asymmetric and zero padding, channel counts that are not a
  // multiple of the vector (partial vectors in the transforms and the GEMM), batch 2, and
  // blocks whose last tiles lie past the image; output channels split into groups that do not
  // divide the channel chunks evenly (24/4 = 6 chunks in 4 groups: 1, 2, 1, 2).
  const std::vector<ss::Conv2dWorkload> shapes = {
      conv3x3(1, 8, 9, 11, 24, {1, 1, 1, 1}),
      conv3x3(2, 3, 7, 5, 20, {0, 2, 1, 0}),
      conv3x3(1, 16, 13, 6, 32, {2, 0, 0, 1}),
  };
  const auto target = tt::codegen::host_target();
  for (const auto& w : shapes) {
    auto task = ss::make_task(ss::kConv2dNCHWcWinograd, w, target);
    ASSERT_TRUE(task.has_value()) << task.error().message;
    auto space = ss::make_config_space(*task);
    ASSERT_TRUE(space.has_value());
    const ss::Config base = ss::default_config(*task, *space);
    const Inputs r = make_inputs(w, false);
    for (int m : ss::kWinogradTiles) {
      for (auto [ic_bn, oc_bn, reg_t, block_t, oc_split, prefetch] :
           std::vector<std::array<int64_t, 6>>{{1, w.out_channels, 1, 1, 1, 0},
                                               {w.in_channels, 4, 3, 2, 1, 1},
                                               {w.in_channels, w.out_channels / 2, 2, 3, 2, 1},
                                               {w.in_channels, 4, 1, 2, 4, 0}}) {
        const ss::Config c =
            config_with(*space, base, m, ic_bn, oc_bn, reg_t, block_t, oc_split, prefetch);
        ASSERT_EQ(ss::conv2d_winograd_schedule(*space, c).oc_split, oc_split);
        ASSERT_EQ(ss::conv2d_winograd_schedule(*space, c).prefetch, prefetch != 0);
        if (!space->is_valid(c)) continue;
        auto got = tt::measure::run_operator(*task, *space, c, r.in, 2);
        ASSERT_TRUE(got.has_value()) << got.error().message;
        ASSERT_EQ(got->shape, r.want.shape);
        for (size_t j = 0; j < r.want.f32.size(); ++j)
          ASSERT_NEAR(got->f32[j], r.want.f32[j], 1e-3 * (1 + std::fabs(r.want.f32[j])))
              << ss::describe_workload(w) << " " << space->describe(c) << " element " << j;
      }
    }
  }
}

TEST(WinogradKernel, BiasAndReluAreFusedIntoTheOutputTransform) {
  const auto w = conv3x3(1, 16, 10, 10, 32, {1, 1, 1, 1});
  auto task = ss::make_task(ss::kConv2dNCHWcWinograd, w, tt::codegen::host_target());
  ASSERT_TRUE(task.has_value());
  auto space = ss::make_config_space(*task);
  Inputs r = make_inputs(w, true);
  for (float& x : r.want.f32) x = std::max(x, 0.0f);
  for (int m : ss::kWinogradTiles) {
    const ss::Config c = config_with(*space, ss::default_config(*task, *space), m, 8, 16, 4, 1);
    ASSERT_TRUE(space->is_valid(c));
    auto got = tt::measure::run_operator(*task, *space, c, r.in, 1, {true, true});
    ASSERT_TRUE(got.has_value()) << got.error().message;
    EXPECT_LT(relative_error(*got, r.want), 1e-4) << "m = " << m;
    int zeros = 0;
    for (float x : got->f32) zeros += x == 0.0f;
    EXPECT_GT(zeros, 0) << "relu was not applied";
  }
}

TEST(WinogradKernel, Float32ErrorOnResnetLayersMeetsTheGoal) {
  // ResNet-18's 3x3 stride-1 layers at their channel counts (smaller images keep the test
  // short: the error depends on the reduction length, IC * 9, not on the image size).
  for (int64_t channels : {64, 128, 256, 512}) {
    const auto w = conv3x3(1, channels, 8, 8, channels, {1, 1, 1, 1});
    auto task = ss::make_task(ss::kConv2dNCHWcWinograd, w, tt::codegen::host_target());
    ASSERT_TRUE(task.has_value());
    auto space = ss::make_config_space(*task);
    const Inputs r = make_inputs(w, false);
    for (int m : ss::kWinogradTiles) {
      const ss::Config c = config_with(*space, ss::default_config(*task, *space), m, 16, 16, 4, 1);
      ASSERT_TRUE(space->is_valid(c)) << space->describe(c);
      auto got = tt::measure::run_operator(*task, *space, c, r.in, 2);
      ASSERT_TRUE(got.has_value()) << got.error().message;
      const double err = relative_error(*got, r.want);
      std::printf("winograd F(%dx%d,3x3) %3lld channels: max relative error %.2e\n", m, m,
                  static_cast<long long>(channels), err);
      // The goal is 1e-4 for m = 2 and 4; m = 6 meets it too (2e-5 at 512 channels here).
      EXPECT_LT(err, 1e-4) << "channels " << channels << " m = " << m;
    }
  }
}

TEST(WinogradTemplate, RefusesLayersItCannotServeNamingWhy) {
  const auto target = tt::codegen::host_target();
  auto strided = conv3x3(1, 8, 8, 8, 8, {1, 1, 1, 1});
  strided.stride_h = strided.stride_w = 2;
  auto one = conv3x3(1, 8, 8, 8, 8, {0, 0, 0, 0});
  one.kernel_h = one.kernel_w = 1;
  auto dilated = conv3x3(1, 8, 8, 8, 8, {2, 2, 2, 2});
  dilated.dilation_h = dilated.dilation_w = 2;
  const std::vector<std::pair<ss::Conv2dWorkload, std::string>> cases = {
      {strided, "stride is 2,2"}, {one, "kernel is 1x1"}, {dilated, "dilation is 2,2"}};
  for (const auto& [w, why] : cases) {
    auto task = ss::make_task(ss::kConv2dNCHWcWinograd, w, target);
    ASSERT_FALSE(task.has_value()) << why;
    EXPECT_NE(task.error().message.find(why), std::string::npos) << task.error().message;
    EXPECT_NE(task.error().message.find("3x3 stride-1"), std::string::npos);
  }
}

TEST(WinogradTemplate, ScratchAndRegisterLimitsBoundTheSpace) {
  const auto w = conv3x3(1, 512, 14, 14, 512, {1, 1, 1, 1});
  auto task = ss::make_task(ss::kConv2dNCHWcWinograd, w, tt::codegen::host_target());
  ASSERT_TRUE(task.has_value());
  auto space = ss::make_config_space(*task);
  int64_t valid = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    auto c = space->config_at(i);
    if (!space->is_valid(*c)) continue;
    ++valid;
    const ss::WinogradSchedule s = ss::conv2d_winograd_schedule(*space, *c);
    const int64_t a2 = int64_t{s.alpha()} * s.alpha();
    ASSERT_LE(4 * a2 * s.tiles_per_block() * (512 + s.oc_bn), ss::kMaxWinogradScratchBytes);
  }
  EXPECT_GT(valid, 0);
  EXPECT_LT(valid, space->size());
  EXPECT_TRUE(space->is_valid(ss::default_config(*task, *space)));
}

}  // namespace
