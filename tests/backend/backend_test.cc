// Compiled networks against the reference interpreter.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "compiler/backend/artifact.h"
#include "compiler/backend/compile.h"
#include "compiler/backend/executor.h"
#include "compiler/frontend/model_zoo.h"
#include "compiler/graph/interpreter.h"

namespace tensortune::backend {
namespace {

using graph::Tensor;

Tensor random_input(const graph::Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(graph::num_elements(shape)));
  for (float& x : v) x = u(rng);
  return Tensor::from_floats(shape, std::move(v));
}

/// max |a - b| / max |b|.
double relative_error(const Tensor& a, const Tensor& b) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < b.f32.size(); ++i) {
    diff = std::max(diff, double(std::fabs(a.f32[i] - b.f32[i])));
    scale = std::max(scale, double(std::fabs(b.f32[i])));
  }
  return diff / scale;
}

/// Compiles, writes to bytes and reads back (every run goes through the artifact), loads.
std::unique_ptr<Executable> build(const graph::Graph& model, const CompileOptions& options, int threads) {
  auto net = compile_network(model, options);
  EXPECT_TRUE(net.has_value()) << net.error().message;
  if (!net) return nullptr;
  auto back = deserialize_network(serialize_network(*net), "test");
  EXPECT_TRUE(back.has_value()) << back.error().message;
  if (!back) return nullptr;
  auto exe = Executable::load(std::make_shared<CompiledNetwork>(std::move(*back)), threads);
  EXPECT_TRUE(exe.has_value()) << exe.error().message;
  return exe ? std::move(*exe) : nullptr;
}

TEST(Backend, Resnet18Opt3) {
  auto model = frontend::zoo_model("resnet-18", {1, 3, 224, 224});
  ASSERT_TRUE(model.has_value());
  const Tensor x = random_input({1, 3, 224, 224}, 1);
  auto ref = graph::interpret(*model, {{"data", x}});
  ASSERT_TRUE(ref.has_value());
  const auto t0 = std::chrono::steady_clock::now();
  auto exe = build(*model, {}, 1);
  ASSERT_TRUE(exe);
  const auto t1 = std::chrono::steady_clock::now();
  auto out = exe->run({{"data", x}});
  ASSERT_TRUE(out.has_value()) << out.error().message;
  const auto t2 = std::chrono::steady_clock::now();
  std::printf("compile %.2f s, run %.2f ms, error %.3g\n", std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count() * 1e3, relative_error((*out)[0], (*ref)[0]));
  for (const auto& s : exe->network().steps) std::printf("  %s %s\n", step_kind_name(s.kind), s.label.c_str());
  EXPECT_LT(relative_error((*out)[0], (*ref)[0]), 1e-4);
}

}  // namespace
}  // namespace tensortune::backend
