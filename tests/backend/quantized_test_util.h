#pragma once
/// \file
/// What the quantized-network tests share: QDQ pieces of ONNX models (a quantize-dequantize pair,
/// int8 weights dequantized per channel), the model through a file and the importer, and running
/// a model compiled (with or without the int8 kernels, in the host's form and the portable one)
/// against the interpreter within one step of the output's quantization.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/graph/interpreter.h"
#include "compiler/passes/passes.h"
#include "compiler/runtime/executor.h"
#include "tests/compiler/onnx_builder.h"

namespace tensortune::quantized_test {

using graph::OpKind;
using graph::Tensor;

inline constexpr int kFloat = onnx::TensorProto_DataType_FLOAT;
inline constexpr int kUInt8 = onnx::TensorProto_DataType_UINT8;
inline constexpr int kInt8 = onnx::TensorProto_DataType_INT8;
inline constexpr double kOutputScale = 0.05;

/// Quantize -> Dequantize of `x` with a scale and zero point of `zp_type`.
inline std::string add_qdq(onnx::GraphProto* g, const std::string& x, const std::string& name,
                           double scale, int zp_type, double zp) {
  frontend::add_initializer(g, name + "_s", kFloat, {}, {scale});
  frontend::add_initializer(g, name + "_z", zp_type, {}, {zp});
  frontend::add_node(g, "QuantizeLinear", name + "_q", {x, name + "_s", name + "_z"}, name + "_q");
  frontend::add_node(g, "DequantizeLinear", name + "_dq", {name + "_q", name + "_s", name + "_z"},
                     name + "_dq");
  return name + "_dq";
}

/// An int8 weight (values spanning -largest..largest) with one scale and a zero zero point per
/// output channel: the names of its values, scales and zero points.
inline std::vector<std::string> add_int8_weight(onnx::GraphProto* g, const std::string& name,
                                                std::vector<int64_t> dims, uint32_t seed,
                                                int largest = 127) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> q(-largest, largest);
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) v = q(rng);
  std::vector<double> scales, zeros;
  for (int64_t o = 0; o < dims[0]; ++o) {
    scales.push_back(0.002 + 0.001 * static_cast<double>(o % 5));
    zeros.push_back(0);
  }
  frontend::add_initializer(g, name + "_w", kInt8, dims, values);
  frontend::add_initializer(g, name + "_ws", kFloat, {dims[0]}, scales);
  frontend::add_initializer(g, name + "_wz", kInt8, {dims[0]}, zeros);
  return {name + "_w", name + "_ws", name + "_wz"};
}

/// An int8 weight dequantized per output channel.
inline std::string add_weight(onnx::GraphProto* g, const std::string& name,
                              std::vector<int64_t> dims, uint32_t seed, int largest = 127) {
  auto* dq =
      frontend::add_node(g, "DequantizeLinear", name + "_wdq",
                         add_int8_weight(g, name, std::move(dims), seed, largest), name + "_wdq");
  *dq->add_attribute() = frontend::int_attr("axis", 0);
  return name + "_wdq";
}

inline onnx::AttributeProto ints_attr(const std::string& name, std::vector<int64_t> v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

/// The model through a file and the importer, as a user's would come.
inline graph::Graph imported(const onnx::ModelProto& m, const std::string& name) {
  const std::string path = frontend::save(m, name);
  auto graph = frontend::import_onnx_file(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(graph) << graph.error().message;
  return graph ? std::move(*graph) : graph::Graph{};
}

inline Tensor interpret(const graph::Graph& g, const Tensor& x) {
  auto y = graph::interpret(g, {{"x", x}});
  EXPECT_TRUE(y) << y.error().message;
  return y ? (*y)[0] : Tensor{};
}

inline Tensor run_compiled(const graph::Graph& model, const Tensor& x, bool integer_kernels,
                           runtime::CompiledNetwork* compiled = nullptr) {
  driver::CompileOptions options;
  options.integer_kernels = integer_kernels;
  auto net = driver::compile_network(model, options);
  EXPECT_TRUE(net) << net.error().message;
  if (!net) return {};
  if (compiled) *compiled = *net;
  auto exe = runtime::Executable::load(std::make_shared<runtime::CompiledNetwork>(*net), 2);
  EXPECT_TRUE(exe) << exe.error().message;
  if (!exe) return {};
  auto y = (*exe)->run({{"x", x}});
  EXPECT_TRUE(y) << y.error().message;
  return y ? (*y)[0] : Tensor{};
}

/// The integer graph's answer: `model` with its quantize-dequantize pairs rewritten to integer
/// operators (fake_quantization_to_integer), interpreted on `x`.
inline Tensor integer_graph_answer(const graph::Graph& model, const Tensor& x) {
  auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
  EXPECT_TRUE(rewritten);
  return rewritten ? interpret(*rewritten, x) : Tensor{};
}

/// Every output within one step of the output's quantization of the reference, and at least
/// `equal_percent` of them equal.
inline void expect_within_one_step(const Tensor& got, const Tensor& want, int64_t equal_percent,
                                   const std::string& what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  int64_t equal = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    ASSERT_LE(std::fabs(got.f32[i] - want.f32[i]), kOutputScale * 1.0001) << what << " at " << i;
    equal += got.f32[i] == want.f32[i];
  }
  EXPECT_GE(equal * 100, want.size() * equal_percent) << what;
}

/// Compiles `model` with the int8 kernels and runs it on `x` in the host's form, in the vector
/// VNNI form (TT_INT8_DOT=vnni: what an AMX host's kernels would be without tiles) and in the
/// portable widened one (TT_INT8_DOT=widened); `check(form, net, output)` after each.
template <typename Check>
inline void for_each_int8_form(const graph::Graph& model, const Tensor& x, Check check) {
  // "vnni": the vector form where the host would take AMX tiles (else the host's form again).
  for (const char* form : {"host", "vnni", "widened"}) {
    if (std::string(form) != "host") setenv("TT_INT8_DOT", form, 1);
    runtime::CompiledNetwork net;
    const Tensor got = run_compiled(model, x, true, &net);
    unsetenv("TT_INT8_DOT");
    check(std::string(form), net, got);
  }
}

inline int count(const graph::Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op == op;
  return n;
}

}  // namespace tensortune::quantized_test
