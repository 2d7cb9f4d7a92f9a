// Generated batch_matmul kernels, in both weight layouts, compute per batch entry what the dense
// reference computes, for every valid config of small spaces.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "tests/compiler/every_config.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tt::Tensor;

namespace {

// The expected output from the dense reference, one batch entry at a time: y[b] = x[b] w[b]^T
// with w[b] taken as (N, K).
Tensor expected(const ss::BatchMatmulWorkload& w, const Tensor& x, const Tensor& wt,
                const Tensor* bias) {
  Tensor out = Tensor::zeros({w.batch, w.m, w.n});
  for (int64_t b = 0; b < w.batch; ++b) {
    Tensor xb = Tensor::zeros({w.m, w.k}), wb = Tensor::zeros({w.n, w.k});
    for (int64_t i = 0; i < w.m * w.k; ++i) xb.f32[i] = x.f32[b * w.m * w.k + i];
    for (int64_t n = 0; n < w.n; ++n)
      for (int64_t k = 0; k < w.k; ++k)
        wb.f32[n * w.k + k] =
            w.transpose_b ? wt.f32[(b * w.n + n) * w.k + k] : wt.f32[(b * w.k + k) * w.n + n];
    const Tensor yb = tt::measure::dense_reference(xb, wb, bias, ss::DenseWorkload{w.m, w.n, w.k});
    for (int64_t i = 0; i < w.m * w.n; ++i) out.f32[b * w.m * w.n + i] = yb.f32[i];
  }
  return out;
}

void check_all(ss::BatchMatmulWorkload w, bool bias, int min_checked) {
  auto task = ss::make_task(ss::kBatchMatmulX86, w, tt::codegen::host_target());
  ASSERT_TRUE(task.has_value()) << task.error().message;
  const ss::OperandShapes shapes = ss::operand_shapes(w);
  tt::measure::OperatorInputs in;
  in.data = Tensor::zeros(shapes.data);
  in.weight = Tensor::zeros(shapes.weight);
  tt::fill_uniform(in.data, 5);
  tt::fill_uniform(in.weight, 6);
  if (bias) {
    in.bias = Tensor::zeros({w.n});
    tt::fill_uniform(*in.bias, 7);
  }
  const Tensor want = expected(w, in.data, in.weight, bias ? &*in.bias : nullptr);
  tt::testing::expect_every_config_computes(*task, in, want, min_checked);
}

TEST(BatchMatmulKernel, WeightAsNKEveryConfigMatchesTheDenseReference) {
  check_all(ss::BatchMatmulWorkload{3, 4, 6, 32, true}, true, 40);
}

TEST(BatchMatmulKernel, WeightAsKNEveryConfigMatchesTheDenseReference) {
  check_all(ss::BatchMatmulWorkload{2, 6, 40, 12, false}, false, 60);
}

TEST(BatchMatmulKernel, OddSizes) {
  check_all(ss::BatchMatmulWorkload{5, 7, 3, 5, true}, false, 4);
  check_all(ss::BatchMatmulWorkload{5, 7, 3, 5, false}, true, 4);
}

}  // namespace
