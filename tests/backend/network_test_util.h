#pragma once
/// \file
/// What the compiled-network tests share: deterministic inputs and the error measure against
/// the reference interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "compiler/graph/tensor.h"

namespace tensortune::testing {

/// Uniform in [-1, 1), the same for the same seed.
inline graph::Tensor random_input(const graph::Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(graph::num_elements(shape)));
  for (float& x : v) x = u(rng);
  return graph::Tensor::from_floats(shape, std::move(v));
}

/// max |a - b| / max |b| (the shapes must agree).
inline double relative_error(const graph::Tensor& a, const graph::Tensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < b.f32.size() && i < a.f32.size(); ++i) {
    diff = std::max(diff, double(std::fabs(a.f32[i] - b.f32[i])));
    scale = std::max(scale, double(std::fabs(b.f32[i])));
  }
  return diff / scale;
}

}  // namespace tensortune::testing
