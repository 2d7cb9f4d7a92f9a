// A residual block of a quantized network: the block's float sum is read twice, by the next
// block's add as it is and, quantized, by the next block's int8 convolution. The kernel that
// computes the sum stores it midway through its epilogue (EpilogueOp::kStoreTensor) and goes on
// to store the bytes, so no separate kernel reads the sum back to quantize it. References: the
// model interpreted as ONNX defines it, and the rewritten integer graph interpreted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "compiler/graph/interpreter.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/passes.h"
#include "tests/backend/network_test_util.h"
#include "tests/backend/quantized_test_util.h"

namespace tensortune {
namespace {

using graph::OpKind;
using graph::Tensor;
using namespace quantized_test;

/// x [2, 8, 9, 7] -> QDQ (uint8, zero point 128) -> conv 8->16 3x3 pads 1, bias, relu = r;
/// r -> QDQ (uint8, 0.03, 5) -> conv 16->16 1x1 -> + r -> relu = s; s -> QDQ (uint8, 0.04, 3)
/// -> conv 16->16 1x1 -> + s -> QDQ (uint8, 0.05, 100) = y. r and s are each read by an add
/// and, quantized, by a convolution.
graph::Graph residual_model() {
  auto m = frontend::model_with_opset(13);
  auto* g = m.mutable_graph();
  frontend::add_input(g, "x", {2, 8, 9, 7});
  const std::string x = add_qdq(g, "x", "in", 0.02, kUInt8, 128);
  std::vector<double> bias;
  for (int o = 0; o < 16; ++o) bias.push_back(0.05 * (o % 7) - 0.15);
  frontend::add_initializer(g, "conv1_b", kFloat, {16}, bias);
  auto* c1 = frontend::add_node(g, "Conv", "conv1",
                                {x, add_weight(g, "conv1", {16, 8, 3, 3}, 1), "conv1_b"}, "conv1");
  *c1->add_attribute() = ints_attr("pads", {1, 1, 1, 1});
  frontend::add_node(g, "Relu", "r", {"conv1"}, "r");
  const std::string rq = add_qdq(g, "r", "rq", 0.03, kUInt8, 5);
  frontend::add_node(g, "Conv", "conv2", {rq, add_weight(g, "conv2", {16, 16, 1, 1}, 2)}, "conv2");
  frontend::add_node(g, "Add", "sum2", {"conv2", "r"}, "sum2");
  frontend::add_node(g, "Relu", "s", {"sum2"}, "s");
  const std::string sq = add_qdq(g, "s", "sq", 0.04, kUInt8, 3);
  frontend::add_node(g, "Conv", "conv3", {sq, add_weight(g, "conv3", {16, 16, 1, 1}, 3)}, "conv3");
  frontend::add_node(g, "Add", "sum3", {"conv3", "s"}, "sum3");
  const std::string y = add_qdq(g, "sum3", "out", kOutputScale, kUInt8, 100);
  frontend::add_node(g, "Identity", "y", {y}, "y");
  g->add_output()->set_name("y");
  return imported(m, "quantized_residual.onnx");
}

/// x [2, 8, 9, 7] -> QDQ (uint8, zero point 128) -> depthwise 3x3 pads 1, no bias (a float
/// kernel: depthwise has no int8 template) = d; d -> QDQ (uint8, 0.03, 5) -> conv 8->16 1x1 ->
/// QDQ (uint8, 0.02, 9) -> conv 16->8 1x1 -> + d -> QDQ (uint8, 0.05, 100) = y. The depthwise
/// kernel's own result, with no epilogue step before it, is what the add reads.
graph::Graph float_anchor_model() {
  auto m = frontend::model_with_opset(13);
  auto* g = m.mutable_graph();
  frontend::add_input(g, "x", {2, 8, 9, 7});
  const std::string x = add_qdq(g, "x", "in", 0.02, kUInt8, 128);
  auto* dw = frontend::add_node(g, "Conv", "d", {x, add_weight(g, "dw", {8, 1, 3, 3}, 4)}, "d");
  *dw->add_attribute() = frontend::int_attr("group", 8);
  *dw->add_attribute() = ints_attr("pads", {1, 1, 1, 1});
  const std::string dq = add_qdq(g, "d", "dq", 0.03, kUInt8, 5);
  frontend::add_node(g, "Conv", "conv2", {dq, add_weight(g, "conv2", {16, 8, 1, 1}, 2)}, "conv2");
  const std::string c2 = add_qdq(g, "conv2", "c2q", 0.02, kUInt8, 9);
  frontend::add_node(g, "Conv", "conv3", {c2, add_weight(g, "conv3", {8, 16, 1, 1}, 3)}, "conv3");
  frontend::add_node(g, "Add", "sum3", {"conv3", "d"}, "sum3");
  const std::string y = add_qdq(g, "sum3", "out", kOutputScale, kUInt8, 100);
  frontend::add_node(g, "Identity", "y", {y}, "y");
  g->add_output()->set_name("y");
  return imported(m, "quantized_float_anchor.onnx");
}

/// residual_model as ONNX Runtime's quantizer writes it (and `tensortune quantize
/// --quantize-outputs`): every layer's output and every sum quantized where computed, so the
/// adds and the next convolutions all read dequantized values. The second block's shortcut is
/// a convolution of its own whose quantization the file lists after the block's main
/// convolution, as the quantizer places a pair in front of its first reader.
graph::Graph runtime_form_model() {
  auto m = frontend::model_with_opset(13);
  auto* g = m.mutable_graph();
  frontend::add_input(g, "x", {2, 8, 9, 7});
  const std::string x = add_qdq(g, "x", "in", 0.02, kUInt8, 128);
  auto* c1 = frontend::add_node(g, "Conv", "conv1", {x, add_weight(g, "conv1", {16, 8, 3, 3}, 1)},
                                "conv1");
  *c1->add_attribute() = ints_attr("pads", {1, 1, 1, 1});
  frontend::add_node(g, "Relu", "r", {"conv1"}, "r");
  const std::string rq = add_qdq(g, "r", "rq", 0.03, kUInt8, 0);
  frontend::add_node(g, "Conv", "conv2", {rq, add_weight(g, "conv2", {16, 16, 1, 1}, 2)}, "conv2");
  const std::string c2 = add_qdq(g, "conv2", "c2q", 0.02, kUInt8, 120);
  frontend::add_node(g, "Add", "sum2", {c2, rq}, "sum2");
  frontend::add_node(g, "Relu", "s", {"sum2"}, "s");
  const std::string sq = add_qdq(g, "s", "sq", 0.04, kUInt8, 0);
  frontend::add_node(g, "Conv", "conv3", {sq, add_weight(g, "conv3", {16, 16, 1, 1}, 3)}, "conv3");
  frontend::add_node(g, "Conv", "shortcut", {sq, add_weight(g, "shortcut", {16, 16, 1, 1}, 4)},
                     "shortcut");
  const std::string c3 = add_qdq(g, "conv3", "c3q", 0.03, kUInt8, 110);
  const std::string sc = add_qdq(g, "shortcut", "scq", 0.03, kUInt8, 130);
  frontend::add_node(g, "Add", "sum3", {c3, sc}, "sum3");
  const std::string y = add_qdq(g, "sum3", "out", kOutputScale, kUInt8, 100);
  frontend::add_node(g, "Identity", "y", {y}, "y");
  g->add_output()->set_name("y");
  return imported(m, "quantized_runtime_form.onnx");
}

/// The fusion group of each node: the graph as the CPU compiler has it before FuseOps (integer
/// convolutions blocked), grouped by FuseOps with or without the LLVM kernels' store_midway
/// and dequantize_in_epilogue.
std::map<std::string, int> groups_of(const graph::Graph& model, bool store_midway) {
  driver::CompileOptions options;
  options.integer_kernels = true;
  graph::Graph before;
  options.after_pass = [&](const std::string& pass, const graph::Graph& g) {
    if (pass == "DeadCodeElimination") before = g;
  };
  EXPECT_TRUE(driver::compile_network(model, options));
  passes::PassContext ctx;
  ctx.opt_level = 3;
  passes::FuseOpsOptions fuse;
  fuse.store_midway = store_midway;
  fuse.dequantize_in_epilogue = store_midway;
  auto g = passes::run_pass(passes::fuse_ops(fuse), before, ctx);
  EXPECT_TRUE(g) << g.error().message;
  std::map<std::string, int> group;
  if (g)
    for (const auto& n : g->nodes()) group[n.name] = n.fusion_group;
  return group;
}

// With store_midway the quantization of r and s (the casts to the next convolutions' bytes)
// joins the group of the kernel that computes them; without it, it is a group of its own, as
// is a value read twice that no int8 kernel reads.
TEST(QuantizedResidual, TheQuantizationOfASumReadTwiceJoinsItsKernel) {
  const graph::Graph model = residual_model();
  for (bool midway : {true, false}) {
    const auto group = groups_of(model, midway);
    ASSERT_TRUE(group.count("conv1") && group.count("conv2.quantized") &&
                group.count("conv3.quantized"));
    EXPECT_EQ(group.at("conv2.quantized") == group.at("conv1"), midway) << midway;
    EXPECT_EQ(group.at("conv3.quantized") == group.at("conv2"), midway) << midway;
    // The residual adds stay in the kernels that read them.
    EXPECT_EQ(group.at("sum2"), group.at("conv2"));
    EXPECT_EQ(group.at("sum3"), group.at("conv3"));
  }
}

// Compiled, the network has no element-wise kernel but the input's quantization (the sums are
// stored twice by their kernels), nothing is interpreted, and the answer is the integer graph's
// (and the model's) within one output step, in the host's int8 form and the portable one.
TEST(QuantizedResidual, KernelsStoreTheSumAndItsBytes) {
  const graph::Graph model = residual_model();
  const Tensor x = testing::random_input({2, 8, 9, 7}, 23);
  auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  const Tensor want = interpret(*rewritten, x);
  for_each_int8_form(
      model, x,
      [&](const std::string& form, const runtime::CompiledNetwork& net, const Tensor& got) {
        int element_wise = 0, interpreted = 0, byte_convolutions = 0, stored_midway = 0;
        for (const auto& step : net.steps) {
          interpreted += step.kind == runtime::Step::Kind::kInterpret;
          if (step.kind != runtime::Step::Kind::kKernel) continue;
          const bool conv = step.label.find("conv2d") != std::string::npos;
          element_wise += !conv;
          const bool bytes = net.graph.type(step.output).dtype == graph::DType::kUInt8;
          byte_convolutions += conv && bytes;
          // A value the step's own nodes compute among its arguments besides its output: the
          // sum it stores midway.
          for (const auto& arg : step.args) {
            if (arg.kind != runtime::ArgRef::Kind::kValue ||
                arg.index == static_cast<int>(step.output))
              continue;
            const int producer = net.graph.value(arg.index).producer;
            stored_midway +=
                std::find(step.nodes.begin(), step.nodes.end(), producer) != step.nodes.end();
          }
        }
        EXPECT_EQ(element_wise, 1) << form;
        EXPECT_EQ(interpreted, 0) << form;
        EXPECT_EQ(byte_convolutions, 2) << form;
        EXPECT_EQ(stored_midway, 2) << form;
        expect_within_one_step(got, want, 99, form);
        expect_within_one_step(got, interpret(model, x), 95, form + " against the model");
      });
}

// In the runtime's form the adds read dequantized sums, not the float ones: each is the
// dequantization of bytes a kernel stored anyway (the next convolution's input) or stores
// instead of the float (the shortcut's, read by the add alone), so the adding kernel reads the
// bytes (ResidualsAsBytes, EpilogueOp::kAddDequantized), no kernel stores a float midway, and
// none of its own dequantizes a sum or casts it; the last block's add of two quantized layers
// joins the kernel of the later one although the file lists the earlier layer's quantization
// after it. The answer is the integer graph's within one step.
TEST(QuantizedResidual, SumsQuantizedWhereComputedStayInTheirKernels) {
  const graph::Graph model = runtime_form_model();
  const auto group = groups_of(model, true);
  ASSERT_TRUE(group.count("sum3") && group.count("shortcut") && group.count("sum2"));
  EXPECT_EQ(group.at("sum3"), group.at("shortcut"));
  EXPECT_EQ(group.at("sum2"), group.at("conv2"));
  const Tensor x = testing::random_input({2, 8, 9, 7}, 31);
  auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  const Tensor want = interpret(*rewritten, x);
  for_each_int8_form(
      model, x,
      [&](const std::string& form, const runtime::CompiledNetwork& net, const Tensor& got) {
        int element_wise = 0, interpreted = 0, kernels = 0, float_reads = 0, byte_reads = 0;
        for (const auto& step : net.steps) {
          interpreted += step.kind == runtime::Step::Kind::kInterpret;
          if (step.kind != runtime::Step::Kind::kKernel) continue;
          ++kernels;
          const bool conv = step.label.find("conv2d") != std::string::npos;
          element_wise += !conv;
          // Tensors a convolution reads or stores besides its data and output: the residuals.
          for (size_t a = 1; conv && a < step.args.size(); ++a) {
            const runtime::ArgRef& arg = step.args[a];
            if (arg.kind != runtime::ArgRef::Kind::kValue ||
                arg.index == static_cast<int>(step.output))
              continue;
            const auto dtype = net.graph.type(arg.index).dtype;
            float_reads += dtype == graph::DType::kFloat32;
            byte_reads += dtype == graph::DType::kUInt8;
          }
        }
        EXPECT_EQ(element_wise, 1) << form << ": the input's quantization alone";
        EXPECT_EQ(kernels, 5) << form;
        EXPECT_EQ(interpreted, 0) << form;
        EXPECT_EQ(float_reads, 0) << form << ": no sum stored or read as float";
        EXPECT_EQ(byte_reads, 2) << form << ": each add's residual, as bytes";
        expect_within_one_step(got, want, 99, form);
        // Against the model's float arithmetic, a sum that float rounding put one step away
        // is one step away again at each later quantization: a few outputs move by two.
        const Tensor model_answer = interpret(model, x);
        int64_t equal = 0, far = 0;
        for (int64_t i = 0; i < got.size(); ++i) {
          const double steps = std::fabs(got.f32[i] - model_answer.f32[i]) / kOutputScale;
          equal += steps < 1e-3;
          far += steps > 1.0001;
          EXPECT_LE(steps, 2.0001) << form << " at " << i;
        }
        EXPECT_GE(equal * 100, got.size() * 95) << form;
        EXPECT_LE(far * 100, got.size()) << form << ": at most 1% two steps away";
      });
}

// ResidualsAsBytes changes what the adds read, not what they compute: the graph before it and
// after it, interpreted, give the same output bit for bit, and after it each add's residual is
// the dequantization of uint8 bytes.
TEST(QuantizedResidual, ResidualsReadAsBytesAreTheSameSums) {
  const graph::Graph model = runtime_form_model();
  driver::CompileOptions options;
  options.integer_kernels = true;
  graph::Graph before, after;
  options.after_pass = [&](const std::string& pass, const graph::Graph& g) {
    if (pass == "DeadCodeElimination" && after.nodes().empty()) before = g;
    if (pass == "ResidualsAsBytes") after = g;
  };
  ASSERT_TRUE(driver::compile_network(model, options));
  ASSERT_FALSE(after.nodes().empty());
  int adds = 0;
  for (const auto& n : after.nodes()) {
    if (n.op != OpKind::kAdd || after.is_constant(n.inputs[1])) continue;
    ++adds;
    auto residual = passes::dequantized_bytes(after, n.inputs[0]);
    if (!residual) residual = passes::dequantized_bytes(after, n.inputs[1]);
    ASSERT_TRUE(residual) << n.name;
    EXPECT_EQ(after.type(residual->bytes).dtype, graph::DType::kUInt8) << n.name;
  }
  EXPECT_EQ(adds, 2);
  const Tensor x = testing::random_input({2, 8, 9, 7}, 37);
  const Tensor want = interpret(before, x), got = interpret(after, x);
  ASSERT_EQ(got.size(), want.size());
  for (int64_t i = 0; i < got.size(); ++i) ASSERT_EQ(got.f32[i], want.f32[i]) << i;
}

// A float kernel (a depthwise convolution) whose own result, before any epilogue step, is read
// by a later add and, quantized, by an int8 convolution: stored at the start of its epilogue,
// then quantized; the answer is the integer graph's within one step.
TEST(QuantizedResidual, AFloatKernelStoresItsOwnResultBeforeQuantizingIt) {
  const graph::Graph model = float_anchor_model();
  const Tensor x = testing::random_input({2, 8, 9, 7}, 29);
  auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  runtime::CompiledNetwork net;
  const Tensor got = run_compiled(model, x, true, &net);
  bool depthwise_stores_bytes = false;
  for (const auto& step : net.steps)
    depthwise_stores_bytes =
        depthwise_stores_bytes || (step.label.starts_with("depthwise") &&
                                   net.graph.type(step.output).dtype == graph::DType::kUInt8);
  EXPECT_TRUE(depthwise_stores_bytes);
  expect_within_one_step(got, interpret(*rewritten, x), 99, "compiled");
}

}  // namespace
}  // namespace tensortune
