// Quantized (QDQ) networks on the int8 kernels: FakeQuantizationToInteger turns a dequantized
// convolution into an exact integer one, and the compiled network runs it on
// conv2d_NCHWc_int8's kernel with the zero point in its padding and the float epilogue fused.
// References: the model as ONNX defines it (the interpreter on the imported graph, float
// convolutions of the dequantized values), and the rewritten graph interpreted.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/graph/interpreter.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/passes/passes.h"
#include "compiler/runtime/executor.h"
#include "tests/backend/network_test_util.h"
#include "tests/backend/quantized_test_util.h"
#include "tests/compiler/onnx_builder.h"

namespace tensortune {
namespace {

using graph::OpKind;
using graph::Tensor;
using namespace quantized_test;

/// How quantized_model varies: the input's channels (not a multiple of 4: padded to one for the
/// int8 kernel), the first convolution's output channels (12: no int8 kernel, it stays float), a
/// depthwise convolution (float, on dequantized values) between the two, and the convolutions'
/// largest weight (64: a reduce-range quantizer's).
struct ModelShape {
  int64_t in_channels = 8;
  bool depthwise = false;
  int largest_weight = 127;
  int64_t mid_channels = 16;
  int64_t width =
      7;  // the input's; 8 makes the first convolution's last column one the second reads
};

/// x [2, C, 9, W = 7] -> QDQ (uint8, zero point 128) -> conv C->M 3x3, pads t1 l0 b2 r1, bias,
/// relu -> QDQ (int8, zero point -3) [-> depthwise 3x3, pads 1 -> QDQ (uint8, zero point 7)]
/// -> conv M->32 1x1 stride 2 -> QDQ (uint8, 0.05, 100). Both activations have non-zero zero
/// points, so padding and the correction are exercised.
graph::Graph quantized_model(ModelShape shape = {}) {
  auto m = frontend::model_with_opset(13);
  auto* g = m.mutable_graph();
  const int64_t mid = shape.mid_channels;
  frontend::add_input(g, "x", {2, shape.in_channels, 9, shape.width});
  const std::string x = add_qdq(g, "x", "in", 0.02, kUInt8, 128);
  const std::string w1 =
      add_weight(g, "conv1", {mid, shape.in_channels, 3, 3}, 1, shape.largest_weight);
  std::vector<double> bias;
  for (int o = 0; o < mid; ++o) bias.push_back(0.05 * (o % 7) - 0.15);
  frontend::add_initializer(g, "conv1_b", kFloat, {mid}, bias);
  auto* c1 = frontend::add_node(g, "Conv", "conv1", {x, w1, "conv1_b"}, "conv1");
  *c1->add_attribute() = ints_attr("pads", {1, 0, 2, 1});
  frontend::add_node(g, "Relu", "relu1", {"conv1"}, "relu1");
  std::string h = add_qdq(g, "relu1", "mid", 0.03, kInt8, -3);
  if (shape.depthwise) {
    const std::string wd = add_weight(g, "dw", {mid, 1, 3, 3}, 4);
    auto* dw = frontend::add_node(g, "Conv", "dw", {h, wd}, "dw");
    *dw->add_attribute() = frontend::int_attr("group", mid);
    *dw->add_attribute() = ints_attr("pads", {1, 1, 1, 1});
    h = add_qdq(g, "dw", "dwq", 0.02, kUInt8, 7);
  }
  const std::string w2 = add_weight(g, "conv2", {32, mid, 1, 1}, 2, shape.largest_weight);
  auto* c2 = frontend::add_node(g, "Conv", "conv2", {h, w2}, "conv2");
  *c2->add_attribute() = ints_attr("strides", {2, 2});
  const std::string y = add_qdq(g, "conv2", "out", kOutputScale, kUInt8, 100);
  frontend::add_node(g, "Identity", "y", {y}, "y");
  g->add_output()->set_name("y");
  return imported(m, "quantized_convs.onnx");
}

/// x [3, 40] -> QDQ (uint8, zero point 100) -> Gemm by an int8 [32, 40] weight (per row) with
/// a bias -> QDQ (uint8, 0.05, 100).
graph::Graph quantized_gemm() {
  auto m = frontend::model_with_opset(13);
  auto* g = m.mutable_graph();
  frontend::add_input(g, "x", {3, 40});
  const std::string x = add_qdq(g, "x", "in", 0.01, kUInt8, 100);
  const std::string w = add_weight(g, "fc", {32, 40}, 3);
  std::vector<double> bias;
  for (int o = 0; o < 32; ++o) bias.push_back(0.01 * (o % 9) - 0.04);
  frontend::add_initializer(g, "fc_b", kFloat, {32}, bias);
  auto* gemm = frontend::add_node(g, "Gemm", "fc", {x, w, "fc_b"}, "fc");
  *gemm->add_attribute() = frontend::int_attr("transB", 1);
  const std::string y = add_qdq(g, "fc", "out", kOutputScale, kUInt8, 100);
  frontend::add_node(g, "Identity", "y", {y}, "y");
  g->add_output()->set_name("y");
  return imported(m, "quantized_gemm.onnx");
}

/// The same convolutions in ONNX's QOperator form (what ONNX Runtime's quantizer writes with
/// QuantFormat.QOperator): x -> QuantizeLinear (uint8, zero point 128) -> QLinearConv C->16 3x3,
/// pads t1 l0 b2 r1, an int32 bias, int8 output (zero point -3) -> depthwise QLinearConv 3x3,
/// pads 1, an int32 bias, uint8 output (zero point 7) -> QLinearConv 16->32 1x1 stride 2, uint8
/// output (0.05, 100) -> DequantizeLinear.
graph::Graph qoperator_model(double dw_bias_step = 500, int64_t in_channels = 8) {
  auto m = frontend::model_with_opset(13);
  auto* g = m.mutable_graph();
  frontend::add_input(g, "x", {2, in_channels, 9, 7});
  auto scalar = [&](const std::string& name, int type, double v) {
    frontend::add_initializer(g, name, type, {}, {v});
    return name;
  };
  frontend::add_node(g, "QuantizeLinear", "xq",
                     {"x", scalar("xs", kFloat, 0.02), scalar("xz", kUInt8, 128)}, "xq");
  const auto w1 = add_int8_weight(g, "conv1", {16, in_channels, 3, 3}, 1);
  std::vector<double> bias;
  for (int o = 0; o < 16; ++o) bias.push_back(300 * (o % 7) - 900);
  frontend::add_initializer(g, "conv1_b", onnx::TensorProto_DataType_INT32, {16}, bias);
  auto* c1 = frontend::add_node(g, "QLinearConv", "conv1",
                                {"xq", "xs", "xz", w1[0], w1[1], w1[2], scalar("y1s", kFloat, 0.03),
                                 scalar("y1z", kInt8, -3), "conv1_b"},
                                "conv1");
  *c1->add_attribute() = ints_attr("pads", {1, 0, 2, 1});
  const auto wd = add_int8_weight(g, "dw", {16, 1, 3, 3}, 4);
  std::vector<double> dw_bias;
  for (int o = 0; o < 16; ++o) dw_bias.push_back(dw_bias_step * (o % 5) - 2 * dw_bias_step);
  frontend::add_initializer(g, "dw_b", onnx::TensorProto_DataType_INT32, {16}, dw_bias);
  auto* dw = frontend::add_node(g, "QLinearConv", "dw",
                                {"conv1", "y1s", "y1z", wd[0], wd[1], wd[2],
                                 scalar("yds", kFloat, 0.02), scalar("ydz", kUInt8, 7), "dw_b"},
                                "dw");
  *dw->add_attribute() = frontend::int_attr("group", 16);
  *dw->add_attribute() = ints_attr("pads", {1, 1, 1, 1});
  const auto w2 = add_int8_weight(g, "conv2", {32, 16, 1, 1}, 2);
  auto* c2 = frontend::add_node(g, "QLinearConv", "conv2",
                                {"dw", "yds", "ydz", w2[0], w2[1], w2[2],
                                 scalar("y2s", kFloat, kOutputScale), scalar("y2z", kUInt8, 100)},
                                "conv2");
  *c2->add_attribute() = ints_attr("strides", {2, 2});
  frontend::add_node(g, "DequantizeLinear", "y", {"conv2", "y2s", "y2z"}, "y");
  g->add_output()->set_name("y");
  return imported(m, "qoperator_convs.onnx");
}

/// x [3, 40] -> QuantizeLinear (uint8, zero point 100) -> QLinearMatMul by an int8 [40, 32]
/// weight, one scale per column -> uint8 (0.05, 100) -> DequantizeLinear.
graph::Graph qoperator_matmul() {
  auto m = frontend::model_with_opset(13);
  auto* g = m.mutable_graph();
  frontend::add_input(g, "x", {3, 40});
  frontend::add_initializer(g, "xs", kFloat, {}, {0.01});
  frontend::add_initializer(g, "xz", kUInt8, {}, {100});
  frontend::add_node(g, "QuantizeLinear", "xq", {"x", "xs", "xz"}, "xq");
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> q(-127, 127);
  std::vector<double> values(40 * 32), scales, zeros;
  for (double& v : values) v = q(rng);
  for (int o = 0; o < 32; ++o) {
    scales.push_back(0.002 + 0.001 * (o % 5));
    zeros.push_back(0);
  }
  frontend::add_initializer(g, "b", kInt8, {40, 32}, values);
  frontend::add_initializer(g, "bs", kFloat, {32}, scales);
  frontend::add_initializer(g, "bz", kInt8, {32}, zeros);
  frontend::add_initializer(g, "ys", kFloat, {}, {kOutputScale});
  frontend::add_initializer(g, "yz", kUInt8, {}, {100});
  frontend::add_node(g, "QLinearMatMul", "fc", {"xq", "xs", "xz", "b", "bs", "bz", "ys", "yz"},
                     "fc");
  frontend::add_node(g, "DequantizeLinear", "y", {"fc", "ys", "yz"}, "y");
  g->add_output()->set_name("y");
  return imported(m, "qoperator_matmul.onnx");
}

// The rewritten graph computes both convolutions in integers, and its answer is the model's:
// every output within one step of the output's quantization, almost all equal.
TEST(QuantizedNetwork, IntegerConvolutionsKeepTheModelsAnswer) {
  const graph::Graph model = quantized_model();
  ASSERT_EQ(count(model, OpKind::kConv2d), 2);
  auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  EXPECT_EQ(count(*rewritten, OpKind::kConv2dInteger), 2);
  EXPECT_EQ(count(*rewritten, OpKind::kConv2d), 0);

  const Tensor x = testing::random_input({2, 8, 9, 7}, 7);
  expect_within_one_step(interpret(*rewritten, x), interpret(model, x), 95, "rewritten");
}

// A convolution the callback refuses, or one whose weights are not 8-bit integers after their
// zero point, stays float.
TEST(QuantizedNetwork, ConvolutionsWithoutAnIntegerKernelStayFloat) {
  const graph::Graph model = quantized_model();
  auto none = passes::run_pass(
      passes::fake_quantization_to_integer([](const schedule_space::Workload& w) {
        return std::get<schedule_space::Conv2dWorkload>(w).kernel_h == 1;  // only the 1x1
      }),
      model, {});
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(count(*none, OpKind::kConv2dInteger), 1);
  EXPECT_EQ(count(*none, OpKind::kConv2d), 1);
}

// Compiled: the convolutions run conv2d_NCHWc_int8's kernels (nothing interpreted), in the
// host's form and in the portable widened form, and equal the rewritten graph interpreted up
// to float rounding in the epilogue; --no-int8 keeps the float kernels.
TEST(QuantizedNetwork, CompiledInt8KernelsEqualTheIntegerGraph) {
  const graph::Graph model = quantized_model();
  const Tensor x = testing::random_input({2, 8, 9, 7}, 11);
  const Tensor want = integer_graph_answer(model, x);
  ASSERT_FALSE(want.shape.empty());
  for_each_int8_form(
      model, x,
      [&](const std::string& form, const runtime::CompiledNetwork& net, const Tensor& got) {
        int int8_kernels = 0, interpreted = 0;
        for (const auto& use : net.schedules) {
          int8_kernels += use.workload.find("conv2d_NCHWc_int8") != std::string::npos;
          EXPECT_EQ(use.workload.find("u8i7"), std::string::npos)
              << "full-range weights: " << use.workload;
        }
        for (const auto& step : net.steps)
          interpreted += step.kind == runtime::Step::Kind::kInterpret;
        EXPECT_EQ(int8_kernels, 2) << form;
        EXPECT_EQ(interpreted, 0) << form;
        expect_within_one_step(got, want, 99, form);
      });

  runtime::CompiledNetwork float_net;
  const Tensor as_float = run_compiled(model, x, false, &float_net);
  for (const auto& use : float_net.schedules)
    EXPECT_EQ(use.workload.find("conv2d_NCHWc_int8"), std::string::npos) << use.workload;
  expect_within_one_step(as_float, interpret(model, x), 95, "float kernels");
}

// Channels wide enough for AMX's tiles where the CPU has them (steps of 16 input channels and
// more): the 3x3 convolution's padding holds the input's zero point (128), which its border
// tiles gather (its right padding reaches the last column, which the strided 1x1 reads); the
// answer is the integer graph's in every form.
TEST(QuantizedNetwork, WideLayersEqualTheIntegerGraphToo) {
  const graph::Graph model = quantized_model({32, false, 127, 48, 8});
  const Tensor x = testing::random_input({2, 32, 9, 8}, 23);
  const Tensor want = integer_graph_answer(model, x);
  ASSERT_FALSE(want.shape.empty());
  for_each_int8_form(
      model, x,
      [&](const std::string& form, const runtime::CompiledNetwork& net, const Tensor& got) {
        int int8_kernels = 0;
        for (const auto& use : net.schedules)
          int8_kernels += use.workload.find("conv2d_NCHWc_int8") != std::string::npos;
        EXPECT_EQ(int8_kernels, 2) << form;
        expect_within_one_step(got, want, 99, form);
      });
}

// Weights within [-64, 64] (a reduce-range quantizer's) make int7 workloads, whose kernels
// multiply bytes directly on AVX2 (`vpmaddubsw`, exact for such weights): the same answer as
// the integer graph, in the host's form and the portable one.
TEST(QuantizedNetwork, SevenBitWeightsRunTheirOwnExactKernels) {
  ModelShape shape;
  shape.largest_weight = 64;
  const graph::Graph model = quantized_model(shape);
  const Tensor x = testing::random_input({2, 8, 9, 7}, 17);
  const Tensor want = integer_graph_answer(model, x);
  ASSERT_FALSE(want.shape.empty());
  for_each_int8_form(
      model, x,
      [&](const std::string& form, const runtime::CompiledNetwork& net, const Tensor& got) {
        int int7_kernels = 0;
        for (const auto& use : net.schedules)
          int7_kernels += use.workload.find("conv2d_NCHWc_int8") != std::string::npos &&
                          use.workload.find(" u8i7") != std::string::npos;
        EXPECT_EQ(int7_kernels, 2) << form;
        expect_within_one_step(got, want, 99, form);
      });
}

// The uint8 data an int8 kernel reads is stored by the kernel before it (an int8 convolution,
// a float one, a depthwise one), its quantize-dequantize pair and cast fused into that kernel's
// epilogue: no separate pass converts floats to bytes, and the answer is the integer graph's.
TEST(QuantizedNetwork, KernelsStoreTheBytesTheNextInt8KernelReads) {
  const std::vector<std::pair<std::string, ModelShape>> shapes = {
      {"int8 conv", {}}, {"float conv", {8, false, 127, 12}}, {"depthwise", {8, true}}};
  for (const auto& [what, shape] : shapes) {
    const graph::Graph model = quantized_model(shape);
    const Tensor x = testing::random_input({2, shape.in_channels, 9, 7}, 13);
    auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
    ASSERT_TRUE(rewritten) << what;
    runtime::CompiledNetwork net;
    const Tensor got = run_compiled(model, x, true, &net);
    int convolutions = 0, element_wise = 0;  // kernels that store uint8
    for (const auto& step : net.steps)
      if (step.kind == runtime::Step::Kind::kKernel &&
          net.graph.type(step.output).dtype == graph::DType::kUInt8)
        ++(step.label.find("conv2d") != std::string::npos ? convolutions : element_wise);
    EXPECT_EQ(convolutions, 1) << what;
    // The network input's quantization, when the first convolution is an int8 one.
    EXPECT_EQ(element_wise, shape.mid_channels == 12 ? 0 : 1) << what;
    expect_within_one_step(got, interpret(*rewritten, x), 99, what);
    expect_within_one_step(got, interpret(model, x), 95, what + " against the model");
  }
}

// A convolution of 1, 3 or 6 input channels (an image's) has no int8 kernel as it is; padded to
// a multiple of 4 (zero-point data, zero weights), as AutoTVM's legalization pads it, it has
// one: the pass pads both, the padded graph computes the model's answer, and compiled the pad is
// a native byte copy, both convolutions run conv2d_NCHWc_int8 kernels (the padded channel
// count in the first's workload) and nothing is interpreted. A callback that refuses the padded
// workload too leaves the convolution float. The QOperator form pads the same way and stays the
// model bit for bit.
TEST(QuantizedNetwork, InputChannelsArePaddedToFourForTheInt8Kernel) {
  const auto served = [](const schedule_space::Workload& w) {
    const auto* conv = std::get_if<schedule_space::Conv2dWorkload>(&w);
    return conv && conv->in_channels % 4 == 0;
  };
  for (int64_t channels : {1, 3, 6}) {
    const std::string what = std::to_string(channels) + " channels";
    ModelShape shape;
    shape.in_channels = channels;
    const graph::Graph model = quantized_model(shape);
    auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(served), model, {});
    ASSERT_TRUE(rewritten) << what << ": " << rewritten.error().message;
    EXPECT_EQ(count(*rewritten, OpKind::kConv2dInteger), 2) << what;
    EXPECT_EQ(count(*rewritten, OpKind::kConv2d), 0) << what;
    const int64_t padded = (channels + 3) / 4 * 4;
    for (const auto& n : rewritten->nodes()) {
      if (n.op == OpKind::kPad) {
        EXPECT_EQ(rewritten->type(n.output).shape, (graph::Shape{2, padded, 9, 7})) << what;
        EXPECT_EQ(rewritten->type(n.output).dtype, graph::DType::kUInt8) << what;
        EXPECT_EQ(graph::attrs_as<graph::PadAttrs>(n.attrs).value, 128) << what;
      }
      if (n.op == OpKind::kConv2dInteger && rewritten->type(n.inputs[1]).shape[0] == 16) {
        EXPECT_EQ(rewritten->type(n.inputs[1]).shape, (graph::Shape{16, padded, 3, 3})) << what;
      }
    }
    EXPECT_EQ(count(*rewritten, OpKind::kPad), 1) << what;
    const Tensor x = testing::random_input({2, channels, 9, 7}, 17);
    const Tensor want = interpret(*rewritten, x);
    expect_within_one_step(want, interpret(model, x), 95, what + ": padded graph vs the model");

    auto refused = passes::run_pass(
        passes::fake_quantization_to_integer([&](const schedule_space::Workload& w) {
          const auto* conv = std::get_if<schedule_space::Conv2dWorkload>(&w);
          return served(w) && conv->in_channels != padded;
        }),
        model, {});
    ASSERT_TRUE(refused) << what;
    EXPECT_EQ(count(*refused, OpKind::kConv2d), 1) << what;
    EXPECT_EQ(count(*refused, OpKind::kPad), 0) << what;

    // QLinearConv (int8 output feeding the next one: its data moves up by 128 before the pad):
    // padded, the integer graph is still the model bit for bit.
    const graph::Graph qop = qoperator_model(500, channels);
    auto qop_rewritten = passes::run_pass(passes::fake_quantization_to_integer(served), qop, {});
    ASSERT_TRUE(qop_rewritten) << what;
    EXPECT_EQ(count(*qop_rewritten, OpKind::kPad), 1) << what;
    const Tensor qop_want = interpret(qop, x), qop_got = interpret(*qop_rewritten, x);
    ASSERT_EQ(qop_got.f32.size(), qop_want.f32.size()) << what;
    for (size_t i = 0; i < qop_want.f32.size(); ++i)
      ASSERT_EQ(qop_got.f32[i], qop_want.f32[i]) << what << ", QLinearConv, at " << i;

    for_each_int8_form(
        model, x,
        [&](const std::string& form, const runtime::CompiledNetwork& net, const Tensor& got) {
          int int8_kernels = 0, interpreted = 0, native_pads = 0;
          bool padded_workload = false;
          for (const auto& use : net.schedules) {
            int8_kernels += use.workload.find("conv2d_NCHWc_int8") != std::string::npos;
            padded_workload = padded_workload ||
                              use.workload.find("conv2d 2x" + std::to_string(padded) + "x9x7") !=
                                  std::string::npos;
          }
          for (const auto& step : net.steps) {
            interpreted += step.kind == runtime::Step::Kind::kInterpret;
            native_pads += step.kind == runtime::Step::Kind::kNative &&
                           net.graph.nodes()[step.nodes.at(0)].op == OpKind::kPad;
          }
          EXPECT_EQ(int8_kernels, 2) << what << ", " << form;
          EXPECT_TRUE(padded_workload) << what << ", " << form;
          EXPECT_EQ(native_pads, 1) << what << ", " << form;
          EXPECT_EQ(interpreted, 0) << what << ", " << form;
          expect_within_one_step(got, want, 99, what + ", " + form);
        });
  }
}

// QLinearConv (ONNX's QOperator form) runs the int8 kernels too: its integer convolution of
// widened operands becomes the uint8 x int8 one with the same int32 result (bit for bit the
// model's answer when interpreted), int8 data moving up by 128; a depthwise one becomes the
// float depthwise convolution of the shifted values, exact in float32; compiled, nothing is
// interpreted and the answer is the model's within one step.
TEST(QuantizedNetwork, QLinearConvolutionsRunTheInt8Kernels) {
  const graph::Graph model = qoperator_model();
  ASSERT_EQ(count(model, OpKind::kConv2dInteger), 3);
  auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  int uint8_data = 0;
  for (const auto& node : rewritten->nodes())
    uint8_data += node.op == OpKind::kConv2dInteger &&
                  rewritten->type(node.inputs[0]).dtype == graph::DType::kUInt8 &&
                  rewritten->type(node.inputs[1]).dtype == graph::DType::kInt8;
  EXPECT_EQ(uint8_data, 2);
  EXPECT_EQ(count(*rewritten, OpKind::kConv2d), 1);  // the depthwise one, in float
  const Tensor x = testing::random_input({2, 8, 9, 7}, 19);
  const Tensor want = interpret(model, x);
  const Tensor exact = interpret(*rewritten, x);
  ASSERT_EQ(exact.f32.size(), want.f32.size());
  for (size_t i = 0; i < want.f32.size(); ++i) ASSERT_EQ(exact.f32[i], want.f32[i]) << i;

  runtime::CompiledNetwork net;
  const Tensor got = run_compiled(model, x, true, &net);
  int int8_kernels = 0, interpreted = 0;
  for (const auto& use : net.schedules)
    int8_kernels += use.workload.find("conv2d_NCHWc_int8") != std::string::npos;
  std::string interpreted_steps;
  for (const auto& step : net.steps)
    if (step.kind == runtime::Step::Kind::kInterpret) interpreted_steps += step.label + "; ";
  int depthwise_kernels = 0;
  for (const auto& use : net.schedules)
    depthwise_kernels += use.workload.find("depthwise_conv2d_NCHWc") != std::string::npos;
  EXPECT_EQ(depthwise_kernels, 1);
  EXPECT_EQ(int8_kernels, 2);
  EXPECT_EQ(interpreted_steps, "");
  expect_within_one_step(got, want, 99, "compiled");
}

// Where a depthwise sum could reach 2^24 (here its int32 bias), float32 would round it: that
// convolution keeps its exact integer form.
TEST(QuantizedNetwork, ADepthwiseQLinearConvThatFloatWouldRoundStaysInteger) {
  const graph::Graph model = qoperator_model(1 << 23);
  auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  EXPECT_EQ(count(*rewritten, OpKind::kConv2d), 0);
  EXPECT_EQ(count(*rewritten, OpKind::kConv2dInteger), 3);
  const Tensor x = testing::random_input({2, 8, 9, 7}, 29);
  const Tensor want = interpret(model, x);
  const Tensor exact = interpret(*rewritten, x);
  ASSERT_EQ(exact.f32.size(), want.f32.size());
  for (size_t i = 0; i < want.f32.size(); ++i) ASSERT_EQ(exact.f32[i], want.f32[i]) << i;
}

// QLinearMatMul of a constant (K, N) weight runs dense_int8's kernel on the weight transposed.
TEST(QuantizedNetwork, AQLinearMatMulRunsTheInt8DenseKernel) {
  const graph::Graph model = qoperator_matmul();
  ASSERT_EQ(count(model, OpKind::kMatMulInteger), 1);
  auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  EXPECT_EQ(count(*rewritten, OpKind::kMatMulInteger), 0);
  const Tensor x = testing::random_input({3, 40}, 23);
  const Tensor want = interpret(model, x);
  const Tensor exact = interpret(*rewritten, x);
  ASSERT_EQ(exact.f32.size(), want.f32.size());
  for (size_t i = 0; i < want.f32.size(); ++i) ASSERT_EQ(exact.f32[i], want.f32[i]) << i;
  runtime::CompiledNetwork net;
  const Tensor got = run_compiled(model, x, true, &net);
  int int8_kernels = 0, interpreted = 0;
  for (const auto& use : net.schedules)
    int8_kernels += use.workload.find("dense_int8") != std::string::npos;
  for (const auto& step : net.steps) interpreted += step.kind == runtime::Step::Kind::kInterpret;
  EXPECT_EQ(int8_kernels, 1);
  EXPECT_EQ(interpreted, 0);
  expect_within_one_step(got, want, 99, "compiled");
}

// A kernel's division by a per-channel constant (a quantization's scale, fused into its
// epilogue) is the correctly rounded quotient, bit for bit the interpreter's: a 1x1 identity
// convolution passes its input through exactly, so any difference is the division's.
TEST(QuantizedNetwork, AKernelsDivisionByAScaleIsCorrectlyRounded) {
  constexpr int64_t kChannels = 16;
  graph::Graph g("divide");
  const graph::ValueId x = g.add_input("x", {graph::DType::kFloat32, {1, kChannels, 24, 24}});
  Tensor identity = Tensor::zeros({kChannels, kChannels, 1, 1});
  for (int64_t c = 0; c < kChannels; ++c) identity.f32[static_cast<size_t>(c * kChannels + c)] = 1;
  Tensor scales = Tensor::zeros({1, kChannels, 1, 1});
  for (int64_t c = 0; c < kChannels; ++c)
    scales.f32[static_cast<size_t>(c)] = 0.0031f + 0.0173f * static_cast<float>(c * c % 11);
  auto conv = g.add_node(OpKind::kConv2d, "conv", {x, g.add_constant("w", identity)},
                         graph::Attrs{{"strides", std::vector<int64_t>{1, 1}},
                                      {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                                      {"dilations", std::vector<int64_t>{1, 1}},
                                      {"groups", int64_t{1}}});
  ASSERT_TRUE(conv);
  auto q = g.add_node(OpKind::kDivide, "q", {*conv, g.add_constant("s", scales)});
  ASSERT_TRUE(q);
  g.add_output(*q);
  // Magnitudes from 1e-3 to 1e3, both signs.
  Tensor input = testing::random_input({1, kChannels, 24, 24}, 17);
  for (size_t i = 0; i < input.f32.size(); ++i)
    input.f32[i] *= std::pow(10.0f, static_cast<float>(i % 7) - 3.0f);
  runtime::CompiledNetwork net;
  const Tensor got = run_compiled(g, input, true, &net);
  ASSERT_EQ(net.steps.size(), 3u);  // layout transform, conv + division, layout transform
  const Tensor want = interpret(g, input);
  ASSERT_EQ(got.f32.size(), want.f32.size());
  for (size_t i = 0; i < want.f32.size(); ++i)
    ASSERT_EQ(got.f32[i], want.f32[i])
        << "at " << i << ": " << input.f32[i] << " / " << scales.f32[i / (24 * 24)];
}

// A quantized Gemm runs dense_int8's kernel: the dense of the quantized values with the zero
// point's per-column correction, its bias and the requantization's answer kept.
TEST(QuantizedNetwork, QuantizedGemmRunsTheInt8DenseKernel) {
  const graph::Graph model = quantized_gemm();
  ASSERT_EQ(count(model, OpKind::kDense), 1);
  auto rewritten = passes::run_pass(passes::fake_quantization_to_integer(), model, {});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  const Tensor x = testing::random_input({3, 40}, 5);
  expect_within_one_step(interpret(*rewritten, x), interpret(model, x), 90, "rewritten");
  runtime::CompiledNetwork net;
  const Tensor got = run_compiled(model, x, true, &net);
  int int8_kernels = 0;
  for (const auto& use : net.schedules)
    int8_kernels += use.workload.find("dense_int8") != std::string::npos;
  EXPECT_EQ(int8_kernels, 1);
  expect_within_one_step(got, interpret(*rewritten, x), 99, "compiled");
}

}  // namespace
}  // namespace tensortune
