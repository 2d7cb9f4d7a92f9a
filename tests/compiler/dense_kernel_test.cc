// Generated dense kernels (packed and not) compute what the reference computes, for every
// valid config of small spaces.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
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

}  // namespace
