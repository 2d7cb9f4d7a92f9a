// Generated dense kernels (packed and not) compute what the reference computes, for every
// valid config of small spaces.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tt::Tensor;

namespace {

void check_all(const char* tmpl, ss::DenseWorkload w, bool bias, int min_checked) {
  auto task = ss::make_task(tmpl, w, tt::codegen::host_target());
  ASSERT_TRUE(task.has_value());
  auto space = ss::make_config_space(*task);
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
  int checked = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    auto c = *space->config_at(i);
    if (!space->is_valid(c)) continue;
    auto got = tt::measure::run_operator(*task, *space, c, in, 1 + (i % 2));
    ASSERT_TRUE(got.has_value()) << got.error().message;
    ASSERT_EQ(got->shape, want.shape);
    for (size_t j = 0; j < want.f32.size(); ++j)
      ASSERT_NEAR(got->f32[j], want.f32[j], 1e-4 * (1 + std::fabs(want.f32[j])))
          << space->describe(c) << " element " << j;
    ++checked;
  }
  EXPECT_GE(checked, min_checked);
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

}  // namespace
