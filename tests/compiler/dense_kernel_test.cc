// Generated dense kernels (packed and not) compute what the reference computes, for every
// valid config of small spaces.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "schedule_space/dense_template.h"
#include "tests/compiler/every_config.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tt::Tensor;

namespace {

void check_all(const char* tmpl, ss::DenseWorkload w, bool bias, int min_checked) {
  auto task = ss::make_task(tmpl, w, tt::codegen::host_target());
  ASSERT_TRUE(task.has_value());
  tt::measure::OperatorInputs in;
  in.data = Tensor::zeros({w.batch, w.in_features});
  in.weight = Tensor::zeros({w.out_features, w.in_features});
  tt::fill_uniform(in.data, 5);
  tt::fill_uniform(in.weight, 6);
  if (bias) {
    in.bias = Tensor::zeros({w.out_features});
    tt::fill_uniform(*in.bias, 7);
  }
  const Tensor want =
      tt::measure::dense_reference(in.data, in.weight, bias ? &*in.bias : nullptr, w);
  tt::testing::expect_every_config_computes(*task, in, want, min_checked);
}

TEST(DenseKernel, PackedEveryConfigMatchesReference) {
  check_all(ss::kDensePack, ss::DenseWorkload{4, 24, 20}, true, 50);
}

TEST(DenseKernel, NopackEveryConfigMatchesReference) {
  check_all(ss::kDenseNopack, ss::DenseWorkload{2, 12, 48}, false, 20);
}

TEST(DenseKernel, BatchOneOddSizes) {
  check_all(ss::kDensePack, ss::DenseWorkload{1, 10, 7}, true, 4);
  check_all(ss::kDenseNopack, ss::DenseWorkload{1, 10, 7}, true, 4);
}

// Weights of a megabyte and more that several row tiles read are prefetched a column tile ahead
// (a network reads them from memory); smaller ones, or one row's, are not.
TEST(DenseKernel, LargePackedWeightsArePrefetchedAColumnTileAhead) {
  auto prefetches = [](const ss::DenseWorkload& w) {
    auto task = *ss::make_task(ss::kDensePack, w, tt::codegen::host_target());
    auto space = *ss::make_config_space(task);
    auto ir = tt::codegen::kernel_ir(task, space, ss::default_config(task, space), {}, false);
    EXPECT_TRUE(ir.has_value()) << ir.error().message;
    return ir->find("@llvm.prefetch") != std::string::npos;
  };
  EXPECT_TRUE(prefetches({128, 768, 768}));  // BERT-base's projections: 2.25 MiB
  EXPECT_TRUE(prefetches({32, 512, 512}));   // 1 MiB, four row tiles of 8
  EXPECT_FALSE(prefetches({1, 512, 512}));   // batch 1 streams its weights once
  EXPECT_FALSE(prefetches({8, 768, 768}));   // one row tile
  EXPECT_FALSE(prefetches({128, 256, 512}));
  EXPECT_FALSE(prefetches({1, 1000, 7}));
}

TEST(DenseKernel, PrefetchingConfigsMatchReference) {
  // 1 MiB of weights; every seventh valid config that prefetches (row tiles of one to eight
  // rows, column tiles of one to many blocks), one and two threads.
  const ss::DenseWorkload w{32, 1024, 256};
  auto task = *ss::make_task(ss::kDensePack, w, tt::codegen::host_target());
  auto space = *ss::make_config_space(task);
  tt::measure::OperatorInputs in;
  in.data = Tensor::zeros({w.batch, w.in_features});
  in.weight = Tensor::zeros({w.out_features, w.in_features});
  tt::fill_uniform(in.data, 8);
  tt::fill_uniform(in.weight, 9);
  const Tensor want = tt::measure::dense_reference(in.data, in.weight, nullptr, w);
  int checked = 0;
  for (int64_t i = 0; i < space.size(); i += 7) {
    const ss::Config c = *space.config_at(i);
    if (!space.is_valid(c) || !ss::dense_schedule(space, c, w, true).prefetch_weights) continue;
    auto got = tt::measure::run_operator(task, space, c, in, 1 + checked % 2);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    for (size_t j = 0; j < want.f32.size(); ++j)
      ASSERT_NEAR(got->f32[j], want.f32[j], 1e-4 * (1 + std::fabs(want.f32[j])))
          << space.describe(c) << " element " << j;
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
