#pragma once
/// \file
/// What the kernel tests of small spaces share: every valid config of a task's space, compiled
/// and run on the same inputs (one and two threads, alternately), against one expected output.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/measure/op_runner.h"

namespace tensortune::testing {

/// Runs every valid config of the task's space and expects each output within 1e-4 (relative)
/// of `want`; at least `min_checked` configs must be valid.
inline void expect_every_config_computes(const schedule_space::Task& task,
                                         const measure::OperatorInputs& in, const Tensor& want,
                                         int min_checked) {
  auto space = schedule_space::make_config_space(task);
  ASSERT_TRUE(space.has_value()) << space.error().message;
  int checked = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    auto c = *space->config_at(i);
    if (!space->is_valid(c)) continue;
    auto got = measure::run_operator(task, *space, c, in, 1 + (i % 2));
    ASSERT_TRUE(got.has_value()) << got.error().message;
    ASSERT_EQ(got->shape, want.shape);
    for (size_t j = 0; j < want.f32.size(); ++j)
      ASSERT_NEAR(got->f32[j], want.f32[j], 1e-4 * (1 + std::fabs(want.f32[j])))
          << space->describe(c) << " element " << j;
    ++checked;
  }
  EXPECT_GE(checked, min_checked);
}

}  // namespace tensortune::testing
