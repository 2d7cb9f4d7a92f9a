#pragma once
/// \file
/// What the compiled-network tests share: deterministic inputs and the error measure against
/// the reference interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "compiler/graph/tensor.h"
#include "schedule_space/task.h"

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

/// The cosine of the angle between two outputs as vectors (the accuracy goals of reduced
/// precisions are written in it).
inline double cosine_similarity(const graph::Tensor& a, const graph::Tensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < b.f32.size() && i < a.f32.size(); ++i) {
    dot += double(a.f32[i]) * b.f32[i];
    aa += double(a.f32[i]) * a.f32[i];
    bb += double(b.f32[i]) * b.f32[i];
  }
  return dot / std::sqrt(aa * bb);
}

/// The template's config for the workload on the target whose knobs take these values (a split
/// knob: its inner factor; a boolean: 0 or 1); knobs not named take their first candidate. A
/// value no candidate has fails the test.
inline schedule_space::TemplateConfig kernel_with(const char* template_name,
                                                  const schedule_space::Workload& w,
                                                  const schedule_space::Target& target,
                                                  const std::map<std::string, int64_t>& values) {
  namespace ss = schedule_space;
  const ss::Task task = *ss::make_task(template_name, w, target);
  const ss::ConfigSpace space = *ss::make_config_space(task);
  std::vector<int32_t> digits(space.knobs().size(), 0);
  for (size_t k = 0; k < space.knobs().size(); ++k) {
    const ss::Knob& knob = space.knobs()[k];
    auto it = values.find(knob.name);
    if (it == values.end()) continue;
    bool found = false;
    for (size_t i = 0; i < knob.options.size() && !found; ++i) {
      const ss::KnobValue& v = knob.options[i];
      const int64_t x = std::holds_alternative<std::vector<int64_t>>(v)
                            ? std::get<std::vector<int64_t>>(v).back()
                        : std::holds_alternative<bool>(v)    ? int64_t{std::get<bool>(v)}
                        : std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v)
                                                             : -1;
      if (x == it->second) {
        digits[k] = static_cast<int32_t>(i);
        found = true;
      }
    }
    EXPECT_TRUE(found) << template_name << ": no candidate " << it->second << " of " << knob.name;
  }
  auto config = space.config_from_digits(digits);
  EXPECT_TRUE(config && space.is_valid(*config)) << template_name << " " << space.describe(*config);
  return {task, space, *config};
}

}  // namespace tensortune::testing
