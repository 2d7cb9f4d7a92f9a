// The quantizer's arithmetic (weight_quantization.h) against brute force and simulation, and the
// quantizer's choices in the models it writes: corrected biases, 7-bit weights where they add
// little noise.
#include "compiler/frontend/onnx_quantizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include "compiler/frontend/model_zoo.h"
#include "compiler/frontend/onnx_batch_norm_folding.h"
#include "compiler/frontend/onnx_constant_folding.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/frontend/onnx_proto.h"
#include "compiler/frontend/weight_quantization.h"
#include "compiler/graph/interpreter.h"
#include "tests/compiler/onnx_builder.h"

namespace tensortune::frontend {
namespace {

using Form = WeightGeometry::Form;
constexpr int kFloat = onnx::TensorProto_DataType_FLOAT;

TEST(WeightQuantization, GeometryNamesEachElementsChannelAndFeature) {
  // A grouped convolution: 6 outputs in 3 groups of 2, 2 inputs per group, 2x3 kernels.
  const WeightGeometry conv{Form::kConv, 6, 6, 3, 6};
  int64_t i = 0;
  for (int64_t o = 0; o < 6; ++o)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t k = 0; k < 6; ++k, ++i) {
        EXPECT_EQ(conv.out_channel(i), o) << i;
        EXPECT_EQ(conv.in_feature(i), o / 2 * 2 + c) << i;
      }
  EXPECT_EQ(conv.size(), i);
  const WeightGeometry kn{Form::kInputsByOutputs, 5, 3};  // [K = 3, N = 5]
  const WeightGeometry nk{Form::kOutputsByInputs, 5, 3};  // [N = 5, K = 3]
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      EXPECT_EQ(kn.out_channel(c * 5 + r), r);
      EXPECT_EQ(kn.in_feature(c * 5 + r), c);
      EXPECT_EQ(nk.out_channel(r * 3 + c), r);
      EXPECT_EQ(nk.in_feature(r * 3 + c), c);
    }
}

TEST(WeightQuantization, EachChannelsLargestMapsToTheRangeAndTheRestRoundToTheNearestStep) {
  const WeightGeometry g{Form::kOutputsByInputs, 3, 4};
  const std::vector<float> w = {0.5f, -1.0f, 0.25f, 0.1f,      // largest 1.0
                                0.0f, 0.0f,  0.0f,  0.0f,      // all zero: scale 1
                                3.0f, 1.5f,  -0.7f, 0.0117f};  // largest 3.0
  for (int range : {127, 64}) {
    const QuantizedWeight q = quantize_weight(w, g, true, range);
    ASSERT_EQ(q.scales.size(), 3u);
    EXPECT_FLOAT_EQ(q.scales[0], 1.0f / float(range));
    EXPECT_FLOAT_EQ(q.scales[1], 1.0f);
    EXPECT_FLOAT_EQ(q.scales[2], 3.0f / float(range));
    EXPECT_EQ(q.values[1], -range);
    EXPECT_EQ(q.values[8], range);
    for (size_t i = 0; i < w.size(); ++i) {
      EXPECT_LE(std::abs(q.values[i]), range);
      EXPECT_LE(std::fabs(double(q.values[i]) * q.scale_of(g, int64_t(i)) - w[i]),
                0.5 * q.scale_of(g, int64_t(i)) + 1e-7)
          << i;
    }
    const QuantizedWeight t = quantize_weight(w, g, false, range);  // one scale: 3 / range
    ASSERT_EQ(t.scales.size(), 1u);
    EXPECT_EQ(t.values[0], std::lround(0.5 * range / 3));
  }
}

// The noise model against a simulation of a dense layer on independent inputs of known mean and
// spread: the weights' error variance with and without the mean cancelled, its mean, and the
// variance from rounding the inputs to a grid.
TEST(WeightQuantization, NoiseModelMatchesASimulatedLayer) {
  const int64_t n = 4, k = 48;
  const WeightGeometry g{Form::kOutputsByInputs, n, k};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (float& v : w) v = normal(rng);
  FeatureMoments m;
  std::vector<double> lo(k), width(k);
  for (int64_t f = 0; f < k; ++f) {  // x_f uniform in [lo, lo + width)
    lo[size_t(f)] = 0.1 * double(f % 5);
    width[size_t(f)] = 0.5 + 0.05 * double(f % 7);
    const double mean = lo[size_t(f)] + width[size_t(f)] / 2;
    m.mean.push_back(mean);
    m.mean_square.push_back(mean * mean + width[size_t(f)] * width[size_t(f)] / 12);
  }
  const QuantizedWeight q = quantize_weight(w, g, true, 64);
  const double step = 0.05;  // the inputs' grid
  const LayerNoise cancelled = layer_noise(w, g, q, step, m, true);
  const LayerNoise raw = layer_noise(w, g, q, step, m, false);
  const std::vector<double> mean_error = mean_output_error(w, g, q, m);

  const int samples = 40000;
  std::vector<double> sum(n), square(n), rounding(n);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> x(k);
  for (int s = 0; s < samples; ++s) {
    for (int64_t f = 0; f < k; ++f) x[size_t(f)] = lo[size_t(f)] + width[size_t(f)] * unit(rng);
    for (int64_t c = 0; c < n; ++c) {
      double e = 0, r = 0;
      for (int64_t f = 0; f < k; ++f) {
        const auto i = static_cast<size_t>(c * k + f);
        e += (double(q.values[i]) * q.scale_of(g, int64_t(i)) - w[i]) * x[size_t(f)];
        r += w[i] * (std::nearbyint(x[size_t(f)] / step) * step - x[size_t(f)]);
      }
      sum[size_t(c)] += e;
      square[size_t(c)] += e * e;
      rounding[size_t(c)] += r * r;
    }
  }
  double variance = 0, second = 0, activation = 0;
  for (int64_t c = 0; c < n; ++c) {
    const double mean = sum[size_t(c)] / samples;
    EXPECT_NEAR(mean, mean_error[size_t(c)], 0.02 * std::fabs(mean) + 1e-4) << c;
    variance += square[size_t(c)] / samples - mean * mean;
    second += square[size_t(c)] / samples;
    activation += rounding[size_t(c)] / samples;
  }
  EXPECT_NEAR(cancelled.weight, variance, 0.05 * variance);
  EXPECT_NEAR(raw.weight, second, 0.05 * second);
  EXPECT_NEAR(cancelled.activation, activation, 0.05 * activation);
  EXPECT_EQ(raw.activation, cancelled.activation);
}

/// Model files of one test, removed at its end.
class OnnxQuantizer : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& p : files_) std::filesystem::remove(p);
  }
  std::string file(const std::string& name) {
    files_.push_back(temp_path(name));
    return files_.back();
  }
  static onnx::ModelProto read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    onnx::ModelProto m;
    EXPECT_TRUE(m.ParseFromIstream(&in)) << path;
    return m;
  }
  static graph::Tensor initializer(const onnx::ModelProto& m, const std::string& name) {
    for (const auto& t : m.graph().initializer())
      if (t.name() == name) {
        auto read = tensor_from_proto(t);
        EXPECT_TRUE(read) << name;
        return read ? *read : graph::Tensor{};
      }
    ADD_FAILURE() << "no initializer " << name;
    return {};
  }
  static graph::Tensor uniform(graph::Shape shape, double lo, double hi, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d{float(lo), float(hi)};
    graph::Tensor t = graph::Tensor::zeros(std::move(shape));
    for (float& v : t.f32) v = d(rng);
    return t;
  }
  static std::vector<float> normal_values(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0, 0.2f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
  }
  static void add_float(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims,
                        const std::vector<float>& values) {
    add_initializer(g, name, kFloat, std::move(dims),
                    std::vector<double>(values.begin(), values.end()));
  }

 private:
  std::vector<std::string> files_;
};

// Inputs of positive mean: rounded weights shift every output channel's mean, which the
// corrected biases cancel on data they were not calibrated on. Four forms: a convolution without
// bias (one is added), a grouped one with a bias, a Gemm with both operands transposed whose
// C (shape [1, N], scaled by beta) keeps its own values plus the correction, and a MatMul whose
// bias is the Add after it.
TEST_F(OnnxQuantizer, BiasCorrectionCancelsTheMeanErrorOfRoundedWeights) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 8, 6, 6});
  add_float(g, "w", {4, 8, 3, 3}, normal_values(4 * 8 * 9, 3));
  add_node(g, "Conv", "conv", {"x", "w"}, "y");
  add_float(g, "w2", {6, 4, 3, 3}, normal_values(6 * 4 * 9, 5));
  add_float(g, "b2", {6}, {0.1f, 0.2f, -0.3f, 0, 0.5f, 1});
  *add_node(g, "Conv", "grouped", {"x", "w2", "b2"}, "y2")->add_attribute() = int_attr("group", 2);
  add_input(g, "v", {16, 6});                             // transA: K x M
  add_float(g, "gw", {5, 16}, normal_values(16 * 5, 4));  // transB: N x K
  const std::vector<float> c = {0.5f, -0.25f, 1, 0, 2};
  add_float(g, "gb", {1, 5}, c);
  auto* gemm = add_node(g, "Gemm", "gemm", {"v", "gw", "gb"}, "z");
  *gemm->add_attribute() = int_attr("transA", 1);
  *gemm->add_attribute() = int_attr("transB", 1);
  auto* beta = gemm->add_attribute();
  beta->set_name("beta");
  beta->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  beta->set_f(2.0f);
  // A linear layer as exporters write one: MatMul on rank-3 data, then an Add of the bias (here
  // its first operand).
  add_input(g, "h", {3, 7, 12});
  add_float(g, "mw", {12, 5}, normal_values(12 * 5, 6));
  add_float(g, "mb", {5}, {0.3f, 0, -1, 0.25f, 0.5f});
  add_node(g, "MatMul", "matmul", {"h", "mw"}, "hm");
  add_node(g, "Add", "bias_add", {"mb", "hm"}, "u");
  for (const char* out : {"y", "y2", "z", "u"}) g->add_output()->set_name(out);
  const std::string in = save(m, "bias_in.onnx");
  file("bias_in.onnx");

  QuantizeOptions options;
  options.reduce_range = ReduceRange::kAll;  // the larger rounding error, the clearer its mean
  // Each input feature (x's channels, v's rows) with a mean of its own, so that a weight's error
  // counts with its own feature's mean.
  auto sample = [&](uint32_t s) {
    graph::Tensor x = uniform({1, 8, 6, 6}, 0.5, 1.5, s), v = uniform({16, 6}, 0, 1, 50 + s);
    graph::Tensor h = uniform({3, 7, 12}, 0, 1, 80 + s);
    for (int64_t i = 0; i < x.size(); ++i) x.f32[size_t(i)] *= float(1 + i / 36 % 3);
    for (int64_t i = 0; i < v.size(); ++i) v.f32[size_t(i)] *= float(1 + (i / 6) % 5);
    for (int64_t i = 0; i < h.size(); ++i) h.f32[size_t(i)] *= float(1 + i % 12 % 4);
    return std::map<std::string, graph::Tensor>{{"x", x}, {"v", v}, {"h", h}};
  };
  for (uint32_t s = 0; s < 4; ++s) options.calibration.push_back(sample(s));
  const std::string corrected = file("bias_corrected.onnx"), plain = file("bias_plain.onnx");
  auto report = quantize_onnx_file(in, corrected, options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->bias_corrected, 4);
  options.bias_correction = false;
  auto plain_report = quantize_onnx_file(in, plain, options);
  ASSERT_TRUE(plain_report) << plain_report.error().message;
  EXPECT_EQ(plain_report->bias_corrected, 0);

  // The Gemm's new C: its own values plus the correction / beta, which is small against them.
  const graph::Tensor gb = initializer(read(corrected), "z_corrected_bias");
  ASSERT_EQ(gb.size(), 5);
  for (size_t k = 0; k < 5; ++k) EXPECT_NEAR(gb.f32[k], c[k], 0.05) << k;

  // Per output, the mean error per channel over fresh data against the float model, summed.
  auto run = [&](const std::string& path) {
    auto graph = import_onnx_file(path);
    EXPECT_TRUE(graph) << graph.error().message;
    std::vector<std::vector<graph::Tensor>> outs;
    for (uint32_t s = 100; s < 108; ++s) {
      auto out = graph::interpret(*graph, sample(s));
      EXPECT_TRUE(out) << out.error().message;
      outs.push_back(*out);
    }
    return outs;
  };
  const auto reference = run(in), with = run(corrected), without = run(plain);
  // Output k's channels and positions: y [1, 4, 4, 4], y2 [1, 6, 4, 4], z [6, 5], u [3, 7, 5].
  struct Layout {
    int64_t channels, positions;
    bool channel_last;
  };
  const Layout layouts[] = {{4, 16, false}, {6, 16, false}, {5, 6, true}, {5, 21, true}};
  auto mean_error = [&](const auto& outs, size_t k) {
    const Layout l = layouts[k];
    double total = 0;
    for (int64_t ch = 0; ch < l.channels; ++ch) {
      double sum = 0;
      for (size_t s = 0; s < outs.size(); ++s)
        for (int64_t p = 0; p < l.positions; ++p) {
          const auto i =
              static_cast<size_t>(l.channel_last ? p * l.channels + ch : ch * l.positions + p);
          sum += outs[s][k].f32[i] - reference[s][k].f32[i];
        }
      total += std::fabs(sum / double(outs.size() * size_t(l.positions)));
    }
    return total;
  };
  for (size_t k = 0; k < 4; ++k)
    EXPECT_LT(mean_error(with, k), mean_error(without, k) / 3)
        << "output " << k << ": " << mean_error(with, k) << " vs " << mean_error(without, k);
}

// Exporters route a tensor that several nodes share through Identity nodes: here one bias of
// two convolutions, and a weight behind two Identities. Both layers are quantized and corrected,
// and the float tensors leave the file with the Identities that passed them on.
TEST_F(OnnxQuantizer, FindsWeightsAndBiasesBehindIdentityNodes) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 4, 5, 5});
  add_float(g, "w", {4, 4, 1, 1}, normal_values(16, 7));
  add_float(g, "b", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
  add_node(g, "Identity", "b_1", {"b"}, "b.1");
  add_node(g, "Identity", "w_1", {"w"}, "w.1");
  add_node(g, "Identity", "w_2", {"w.1"}, "w.2");
  add_node(g, "Conv", "first", {"x", "w.2", "b.1"}, "y1");
  add_node(g, "Relu", "relu", {"y1"}, "r");
  add_float(g, "w2", {4, 4, 1, 1}, normal_values(16, 8));
  add_node(g, "Conv", "second", {"r", "w2", "b.1"}, "y2");
  g->add_output()->set_name("y2");
  const std::string in = save(m, "identity_in.onnx");
  file("identity_in.onnx");
  QuantizeOptions options;
  options.calibration.push_back({{"x", uniform({1, 4, 5, 5}, 0, 1, 1)}});
  const std::string out = file("identity_out.onnx");
  auto report = quantize_onnx_file(in, out, options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->quantized, 2);
  EXPECT_EQ(report->bias_corrected, 2);
  EXPECT_TRUE(report->skipped.empty());
  const onnx::ModelProto q = read(out);
  for (const auto& n : q.graph().node()) EXPECT_NE(n.op_type(), "Identity") << n.name();
  for (const auto& t : q.graph().initializer())
    EXPECT_TRUE(t.name() != "w" && t.name() != "b") << t.name() << " is still in the file";
  EXPECT_EQ(initializer(q, "w_quantized").dtype, graph::DType::kInt8);
  // Still a model: the importer reads it and the interpreter runs it.
  auto graph = import_onnx_file(out);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_TRUE(graph::interpret(*graph, {{"x", uniform({1, 4, 5, 5}, 0, 1, 2)}}));
}

// Weights as exporters with constant folding off write them (paddle2onnx, older tf2onnx): a
// Constant node reshaped to OIHW; a Constant of the transposed matrix behind a Transpose; a
// float16 Constant behind a Cast, squeezed and unsqueezed. All are folded into initializers and
// quantized, and the QDQ model computes what the float one does, within int8's rounding.
TEST_F(OnnxQuantizer, WeightsWrittenAsConstantNodesAreFoldedAndQuantized) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 4, 5, 5});
  auto constant = [&](const std::string& out, const graph::Tensor& t) {
    auto* n = add_node(g, "Constant", out + "_node", {}, out);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    tensor_to_proto(t, out, a->mutable_t());
  };
  const std::vector<float> w1 = normal_values(4 * 4 * 3 * 3, 11);
  constant("w1_flat", graph::Tensor::from_floats({4, 36}, w1));
  constant("w1_shape", graph::Tensor::from_ints({4}, {4, 4, 3, 3}));
  add_node(g, "Reshape", "w1_reshape", {"w1_flat", "w1_shape"}, "w1");
  add_node(g, "Conv", "conv", {"x", "w1"}, "c");
  auto* pads = g->mutable_node(g->node_size() - 1)->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  add_node(g, "Relu", "relu", {"c"}, "r");
  add_ints_initializer(g, "flat_shape", {1, 100});
  add_node(g, "Reshape", "flatten", {"r", "flat_shape"}, "f");
  // MatMul's weight [100, 6], written as its transpose [6, 100].
  constant("w2_t", graph::Tensor::from_floats({6, 100}, normal_values(600, 12)));
  add_node(g, "Transpose", "w2_transpose", {"w2_t"}, "w2");
  add_node(g, "MatMul", "matmul", {"f", "w2"}, "y");
  // Gemm's weight [6, 3]: float16, [1, 6, 3] squeezed, then cast.
  graph::Tensor half = graph::Tensor::from_floats({1, 6, 3}, normal_values(18, 13));
  half.dtype = graph::DType::kFloat16;
  half.round_to_dtype();
  constant("w3_half", half);
  add_ints_initializer(g, "axis0", {0});
  add_node(g, "Squeeze", "w3_squeeze", {"w3_half", "axis0"}, "w3_h");
  auto* cast = add_node(g, "Cast", "w3_cast", {"w3_h"}, "w3");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(kFloat);
  add_node(g, "Gemm", "gemm", {"y", "w3"}, "z");
  g->add_output()->set_name("z");
  const std::string in = save(m, "constants_in.onnx");
  file("constants_in.onnx");
  QuantizeOptions options;
  for (uint32_t s = 1; s <= 4; ++s)
    options.calibration.push_back({{"x", uniform({1, 4, 5, 5}, -1, 1, s)}});
  const std::string out = file("constants_out.onnx");
  auto report = quantize_onnx_file(in, out, options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->candidates, 3);
  EXPECT_EQ(report->quantized, 3) << (report->skipped.empty() ? "" : report->skipped[0]);
  EXPECT_EQ(report->folded, 8);  // 4 Constants, the Reshape, the Transpose, the Squeeze, the Cast
  const onnx::ModelProto q = read(out);
  for (const auto& n : q.graph().node())
    EXPECT_TRUE(n.op_type() != "Constant" && n.op_type() != "Transpose" && n.op_type() != "Cast")
        << n.op_type() << " " << n.name() << " is still in the model";
  EXPECT_EQ(initializer(q, "w1_quantized").dtype, graph::DType::kInt8);
  EXPECT_EQ(initializer(q, "w1_quantized").shape, (graph::Shape{4, 4, 3, 3}));
  // The transposed weight is the MatMul's [K = 100, N = 6].
  EXPECT_EQ(initializer(q, "w2_quantized").shape, (graph::Shape{100, 6}));
  // Folding alone changes nothing the model computes.
  onnx::ModelProto folded = m;
  auto count = fold_constant_weights(folded.mutable_graph(), 13);
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(*count, 8);
  const std::string folded_path = save(folded, "constants_folded.onnx");
  file("constants_folded.onnx");
  auto float_model = import_onnx_file(in);
  auto folded_model = import_onnx_file(folded_path);
  auto quantized = import_onnx_file(out);
  ASSERT_TRUE(folded_model) << folded_model.error().message;
  ASSERT_TRUE(float_model) << float_model.error().message;
  ASSERT_TRUE(quantized) << quantized.error().message;
  const graph::Tensor x = uniform({1, 4, 5, 5}, -1, 1, 9);
  auto want = graph::interpret(*float_model, {{"x", x}});
  auto same = graph::interpret(*folded_model, {{"x", x}});
  auto got = graph::interpret(*quantized, {{"x", x}});
  ASSERT_TRUE(want && same && got);
  EXPECT_EQ(want->front().f32, same->front().f32);
  // Quantized, the Constant-node model is the model whose weights were initializers all along.
  const std::string from_folded = file("constants_folded_out.onnx");
  auto direct = quantize_onnx_file(folded_path, from_folded, options);
  ASSERT_TRUE(direct) << direct.error().message;
  EXPECT_EQ(direct->quantized, 3);
  auto direct_model = import_onnx_file(from_folded);
  ASSERT_TRUE(direct_model) << direct_model.error().message;
  auto direct_out = graph::interpret(*direct_model, {{"x", x}});
  ASSERT_TRUE(direct_out);
  EXPECT_EQ(got->front().f32, direct_out->front().f32);
  // And near the float model: three int8 layers calibrated on four samples.
  double peak = 0, worst = 0;
  for (size_t i = 0; i < want->front().f32.size(); ++i) {
    peak = std::max(peak, double(std::fabs(want->front().f32[i])));
    worst = std::max(worst, double(std::fabs(want->front().f32[i] - got->front().f32[i])));
  }
  EXPECT_LT(worst, 0.15 * peak) << "worst " << worst << " of " << peak;
}

// A whole network exported the paddle2onnx way: every initializer of ResNet-18 moved into a
// Constant node. Every convolution and the classifier are quantized as from the plain export.
TEST_F(OnnxQuantizer, ANetworkWhoseWeightsAreAllConstantNodesQuantizesLikeItsPlainExport) {
  auto net = zoo_model("resnet-18", {1, 3, 32, 32});
  ASSERT_TRUE(net) << net.error().message;
  const std::string plain = file("r18_plain.onnx");
  ASSERT_TRUE(export_onnx(*net, plain));
  onnx::ModelProto m = read(plain);
  onnx::GraphProto* g = m.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto& init : g->initializer()) {
    onnx::NodeProto* n = nodes.Add();
    n->set_op_type("Constant");
    n->add_output(init.name());
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = init;
  }
  for (const auto& n : g->node()) *nodes.Add() = n;
  g->clear_initializer();
  g->mutable_node()->Swap(&nodes);
  const std::string constants = file("r18_constants.onnx");
  {
    std::ofstream out(constants, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&out));
  }
  QuantizeOptions options;
  options.calibration.push_back({{"data", uniform({1, 3, 32, 32}, 0, 1, 1)}});
  auto from_plain = quantize_onnx_file(plain, file("r18_plain_q.onnx"), options);
  auto from_constants = quantize_onnx_file(constants, file("r18_constants_q.onnx"), options);
  ASSERT_TRUE(from_plain) << from_plain.error().message;
  ASSERT_TRUE(from_constants) << from_constants.error().message;
  EXPECT_EQ(from_plain->quantized, 21);  // 20 convolutions and the classifier
  EXPECT_EQ(from_constants->quantized, from_plain->quantized);
  EXPECT_GE(from_constants->folded, 21);
  EXPECT_TRUE(from_constants->skipped.empty()) << from_constants->skipped.front();
}

// --quantize-outputs writes what ONNX Runtime fuses into its integer kernels: every convolution
// reads a dequantized value and its result (after the Relu that alone reads it) goes to one
// QuantizeLinear, with zero point 0 after a Relu (the runtime drops the Relu into the clip);
// every residual Add reads two dequantized values and is quantized the same way; the max pool's
// quantization is its input's; batch norms between a convolution and its Relu are passed (the
// runtime folds them into the weights); the classifier's result, the graph's output after its
// bias add, stays float. Interpreted, the model still answers as the float one does.
TEST_F(OnnxQuantizer, QuantizedOutputsAreThePatternsOnnxRuntimeFuses) {
  auto net = zoo_model("resnet-18", {1, 3, 32, 32});
  ASSERT_TRUE(net) << net.error().message;
  const std::string plain = file("r18_outputs.onnx");
  ASSERT_TRUE(export_onnx(*net, plain));
  QuantizeOptions options;
  options.calibration.push_back({{"data", uniform({1, 3, 32, 32}, 0, 1, 1)}});
  options.quantize_outputs = true;
  const std::string out = file("r18_outputs_q.onnx");
  auto report = quantize_onnx_file(plain, out, options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->quantized, 21);
  EXPECT_EQ(report->outputs_quantized, 20 + 8 + 1);  // convolutions, residual adds, the pool

  const onnx::ModelProto m = read(out);
  const onnx::GraphProto& g = m.graph();
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, std::vector<const onnx::NodeProto*>> readers;
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) producer[o] = &n;
    for (const auto& i : n.input()) readers[i].push_back(&n);
  }
  auto produced_by = [&](const std::string& v, const std::string& op) {
    return producer.count(v) && producer.at(v)->op_type() == op;
  };
  // The value a result is quantized as: after a Relu that alone reads it. The QuantizeLinear
  // that alone reads it, or nullptr.
  auto quantize_of = [&](std::string v, bool* after_relu) -> const onnx::NodeProto* {
    *after_relu = false;
    if (readers[v].size() == 1 && readers[v][0]->op_type() == "BatchNormalization")
      v = readers[v][0]->output(0);
    if (readers[v].size() == 1 && readers[v][0]->op_type() == "Relu") {
      v = readers[v][0]->output(0);
      *after_relu = true;
    }
    if (readers[v].size() != 1 || readers[v][0]->op_type() != "QuantizeLinear") return nullptr;
    return readers[v][0];
  };
  auto scalar = [&](const std::string& name) {
    const graph::Tensor t = initializer(m, name);
    return t.size() == 1 ? t.at(0) : -1.0;
  };
  int convs = 0, adds = 0, pools = 0;
  for (const auto& n : g.node()) {
    if (n.op_type() == "Conv") {
      ++convs;
      EXPECT_TRUE(produced_by(n.input(0), "DequantizeLinear")) << n.name();
      bool after_relu = false;
      const onnx::NodeProto* q = quantize_of(n.output(0), &after_relu);
      ASSERT_NE(q, nullptr) << n.name() << ": its result is not quantized";
      if (after_relu) EXPECT_EQ(scalar(q->input(2)), 0) << n.name();
    } else if (n.op_type() == "Add" && producer.count(n.input(1))) {  // not a bias add
      ++adds;
      EXPECT_TRUE(produced_by(n.input(0), "DequantizeLinear")) << n.name();
      EXPECT_TRUE(produced_by(n.input(1), "DequantizeLinear")) << n.name();
      bool after_relu = false;
      const onnx::NodeProto* q = quantize_of(n.output(0), &after_relu);
      ASSERT_NE(q, nullptr) << n.name() << ": the sum is not quantized";
      EXPECT_TRUE(after_relu) << n.name();
      EXPECT_EQ(scalar(q->input(2)), 0) << n.name();
    } else if (n.op_type() == "MaxPool") {
      ++pools;
      ASSERT_TRUE(produced_by(n.input(0), "DequantizeLinear"));
      const onnx::NodeProto* in = producer.at(n.input(0));
      ASSERT_EQ(readers[n.output(0)].size(), 1u);
      const onnx::NodeProto* q = readers[n.output(0)][0];
      ASSERT_EQ(q->op_type(), "QuantizeLinear");
      EXPECT_EQ(scalar(q->input(1)), scalar(in->input(1))) << "the pool's scale is its input's";
      EXPECT_EQ(scalar(q->input(2)), scalar(in->input(2)));
    } else if (n.op_type() == "Gemm") {
      ASSERT_EQ(readers[n.output(0)].size(), 1u);
      const std::string logits = readers[n.output(0)][0]->output(0);  // after its bias add
      EXPECT_TRUE(readers[logits].empty()) << "the graph's output stays float";
    }
  }
  EXPECT_EQ(convs, 20);
  EXPECT_EQ(adds, 8);
  EXPECT_EQ(pools, 1);

  // The same sample through the float model and the quantized one.
  auto float_model = import_onnx_file(plain);
  auto quantized = import_onnx_file(out);
  ASSERT_TRUE(float_model && quantized);
  const std::map<std::string, graph::Tensor> sample = {{"data", uniform({1, 3, 32, 32}, 0, 1, 2)}};
  auto want = graph::interpret(*float_model, sample);
  auto got = graph::interpret(*quantized, sample);
  ASSERT_TRUE(want && got);
  double dot = 0, ww = 0, gg = 0;
  for (int64_t i = 0; i < (*want)[0].size(); ++i) {
    dot += (*want)[0].at(i) * (*got)[0].at(i);
    ww += (*want)[0].at(i) * (*want)[0].at(i);
    gg += (*got)[0].at(i) * (*got)[0].at(i);
  }
  EXPECT_GT(dot / std::sqrt(ww * gg), 0.99);
}

// A batch norm after a convolution folds into the convolution's weights and bias: the graph
// answers as before (the float model interpreted, within float rounding), the batch norm is
// gone, and the convolution writes its output. One whose convolution shares its weight with
// another convolution stays, as does one that reads a value something else reads too.
TEST_F(OnnxQuantizer, BatchNormsFoldIntoTheConvolutionsBeforeThem) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 3, 6, 6});
  add_float(g, "w", {8, 3, 3, 3}, normal_values(8 * 27, 21));
  add_float(g, "b", {8}, normal_values(8, 22));
  auto batch_norm = [&](const std::string& name, const std::string& in, const std::string& out,
                        uint32_t seed) {
    std::vector<float> scale = normal_values(8, seed), var = normal_values(8, seed + 1);
    for (float& v : var) v = v * v + 0.1f;
    scale[3] = -scale[3];  // a negative scale flips the channel
    add_float(g, name + "_scale", {8}, scale);
    add_float(g, name + "_shift", {8}, normal_values(8, seed + 2));
    add_float(g, name + "_mean", {8}, normal_values(8, seed + 3));
    add_float(g, name + "_var", {8}, var);
    add_node(g, "BatchNormalization", name,
             {in, name + "_scale", name + "_shift", name + "_mean", name + "_var"}, out);
  };
  add_node(g, "Conv", "conv1", {"x", "w", "b"}, "c1");  // its weight is conv2's too: stays
  batch_norm("bn1", "c1", "n1", 30);
  add_float(g, "w3", {8, 8, 1, 1}, normal_values(64, 23));
  add_node(g, "Conv", "conv2", {"x", "w"}, "c2");
  add_node(g, "Add", "sum", {"n1", "c2"}, "s");
  add_node(g, "Conv", "conv3", {"s", "w3"}, "c3");  // no bias: the fold adds one
  batch_norm("bn3", "c3", "y", 40);
  g->add_output()->set_name("y");
  onnx::ModelProto folded = m;
  auto count = fold_batch_norms(folded.mutable_graph());
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(*count, 1);
  int batch_norms = 0;
  for (const auto& n : folded.graph().node()) {
    batch_norms += n.op_type() == "BatchNormalization";
    if (n.name() == "conv3") {
      EXPECT_EQ(n.output(0), "y");
      EXPECT_EQ(n.input_size(), 3);
    }
  }
  EXPECT_EQ(batch_norms, 1) << "bn1's convolution shares its weight";
  auto before = import_onnx_bytes(m.SerializeAsString(), "before");
  auto after = import_onnx_bytes(folded.SerializeAsString(), "after");
  ASSERT_TRUE(before) << before.error().message;
  ASSERT_TRUE(after) << after.error().message;
  const std::map<std::string, graph::Tensor> sample = {{"x", uniform({1, 3, 6, 6}, -1, 1, 5)}};
  auto want = graph::interpret(*before, sample);
  auto got = graph::interpret(*after, sample);
  ASSERT_TRUE(want && got);
  ASSERT_EQ((*want)[0].size(), (*got)[0].size());
  for (int64_t i = 0; i < (*want)[0].size(); ++i)
    EXPECT_NEAR((*got)[0].at(i), (*want)[0].at(i), 1e-4 * (1 + std::fabs((*want)[0].at(i)))) << i;
}

TEST_F(OnnxQuantizer, AModelWithNothingToQuantizeIsAnErrorUnlessAllowed) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 4});
  add_input(g, "w", {4, 3});  // the weight is an input: nothing to quantize
  add_node(g, "MatMul", "matmul", {"x", "w"}, "y");
  g->add_output()->set_name("y");
  const std::string in = save(m, "none_in.onnx");
  file("none_in.onnx");
  QuantizeOptions options;
  options.calibration.push_back(
      {{"x", uniform({1, 4}, -1, 1, 1)}, {"w", uniform({4, 3}, -1, 1, 2)}});
  const std::string out = file("none_out.onnx");
  auto refused = quantize_onnx_file(in, out, options);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("quantized none of its 1 Conv, Gemm and MatMul nodes"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(
      refused.error().message.find("node 'matmul' (MatMul): its weight is not an initializer"),
      std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("--allow-none"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing is written";
  options.allow_none = true;
  auto allowed = quantize_onnx_file(in, out, options);
  ASSERT_TRUE(allowed) << allowed.error().message;
  EXPECT_EQ(allowed->quantized, 0);
  EXPECT_TRUE(std::filesystem::exists(out));
}

// Two layers: one reads an activation whose range is stretched by a rare outlier (its rounding
// noise dwarfs its weights'), the other smooth activations and weights with an outlier per
// channel (its weights' rounding dominates). --reduce-range=auto narrows the first only.
TEST_F(OnnxQuantizer, ReducesTheRangeOnlyWhereItAddsLittleNoise) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "a", {4, 32});
  add_input(g, "b", {4, 32});
  // a's feature 0 carries the outlier; its weights are 0 (exact at any range), so that only the
  // outlier's stretch of the range shows, not its own products.
  std::vector<float> wa = normal_values(32 * 8, 5);
  std::fill(wa.begin(), wa.begin() + 8, 0.0f);
  add_float(g, "wa", {32, 8}, wa);
  std::vector<float> wb = normal_values(32 * 8, 6);
  for (size_t c = 0; c < 8; ++c) wb[c] = 4.0f;  // row 0: one large weight per output channel
  add_float(g, "wb", {32, 8}, wb);
  add_node(g, "MatMul", "ma", {"a", "wa"}, "ya");
  add_node(g, "MatMul", "mb", {"b", "wb"}, "yb");
  g->add_output()->set_name("ya");
  g->add_output()->set_name("yb");
  const std::string in = save(m, "mixed_in.onnx");
  file("mixed_in.onnx");

  QuantizeOptions options;
  for (uint32_t s = 0; s < 4; ++s) {
    graph::Tensor a = uniform({4, 32}, 0, 1, s);
    a.f32[0] = 60;  // the outlier that sets a's range
    options.calibration.push_back({{"a", a}, {"b", uniform({4, 32}, 0, 1, 20 + s)}});
  }
  auto largest = [&](const std::string& path, const std::string& name) {
    const graph::Tensor q = initializer(read(path), name);
    double most = 0;
    for (int64_t i = 0; i < q.size(); ++i) most = std::max(most, std::fabs(q.at(i)));
    return most;
  };
  const std::string out = file("mixed.onnx");
  options.reduce_range = ReduceRange::kWhereQuiet;
  auto report = quantize_onnx_file(in, out, options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->reduced, 1);
  EXPECT_EQ(report->full, 1);
  EXPECT_EQ(report->weight_max, 127);
  EXPECT_EQ(largest(out, "wa_quantized"), 64);
  EXPECT_EQ(largest(out, "wb_quantized"), 127);

  options.noise_growth = 100;  // any growth allowed: both narrow
  report = quantize_onnx_file(in, out, options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->reduced, 2);
  EXPECT_EQ(report->weight_max, 64);
  EXPECT_EQ(largest(out, "wb_quantized"), 64);

  options.reduce_range = ReduceRange::kNone;
  report = quantize_onnx_file(in, out, options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->reduced, 0);
  EXPECT_EQ(largest(out, "wa_quantized"), 127);
}

}  // namespace
}  // namespace tensortune::frontend
