// Passes: every zoo model gives the same answer at every opt level (the interpreter is the
// oracle), the unsafe FoldScaleAxis variant is caught, and the pass-invocation rule holds.
#include "compiler/passes/passes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>

#include "compiler/frontend/model_zoo.h"
#include "compiler/graph/interpreter.h"
#include "compiler/graph/op_attrs.h"
#include "tests/support/sanitized.h"

namespace tensortune::passes {
namespace {

using graph::Graph;
using graph::OpKind;
using graph::Tensor;

// Optimised graphs reassociate float sums (folded weights, blocked reductions); the answer
// must agree to 1e-4 of the output's largest magnitude. Observed: <= 5e-6.
constexpr double kTolerance = 1e-4;

int count(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op == op;
  return n;
}

// The zoo models' input: 224x224, 64x64 under a sanitizer (tests/support/sanitized.h).
graph::Shape zoo_shape() { return {1, 3, testing::kZooInputSize, testing::kZooInputSize}; }

std::map<std::string, Tensor> zoo_input() {
  Tensor x = Tensor::zeros(zoo_shape());
  fill_uniform(x, 42);
  return {{"data", std::move(x)}};
}

double relative_error(const Tensor& got, const Tensor& want) {
  double scale = 0, diff = 0;
  for (size_t i = 0; i < want.f32.size(); ++i) {
    scale = std::max(scale, double(std::abs(want.f32[i])));
    diff = std::max(diff, double(std::abs(got.f32[i] - want.f32[i])));
  }
  return diff / scale;
}

class ZooAtEveryOptLevel : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooAtEveryOptLevel, OptimisedGraphEqualsTheUnoptimisedOne) {
  auto model = frontend::zoo_model(GetParam(), zoo_shape());
  ASSERT_TRUE(model) << model.error().message;
  const auto input = zoo_input();
  auto reference = graph::interpret(*model, input);
  ASSERT_TRUE(reference) << reference.error().message;
  for (int level = 0; level <= 3; ++level) {
    PassContext ctx;
    ctx.opt_level = level;
    auto optimised = run_pipeline(standard_pipeline(), *model, ctx);
    ASSERT_TRUE(optimised) << optimised.error().message;
    auto out = graph::interpret(*optimised, input);
    ASSERT_TRUE(out) << out.error().message;
    const double err = relative_error((*out)[0], (*reference)[0]);
    std::cout << GetParam() << " opt level " << level << ": " << optimised->nodes().size()
              << " nodes, relative error " << err << "\n";
    EXPECT_LT(err, kTolerance) << GetParam() << " at opt level " << level;
    if (level == 3) {
      // The folds and the layout change did happen, so the comparison means something.
      EXPECT_EQ(count(*optimised, OpKind::kMultiply), 0);
      EXPECT_EQ(count(*optimised, OpKind::kBatchNorm), 0);
      EXPECT_EQ(count(*optimised, OpKind::kConv2d), 0);
      EXPECT_GT(count(*optimised, OpKind::kConv2dNCHWc), 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooAtEveryOptLevel,
                         ::testing::Values("resnet-18", "resnet-50", "vgg-16", "mobilenet-v1"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// NNVM's bug, kept behind a test-only switch: moving negative scales across relu. The zoo's
// negative batch-norm scales must expose it, or the equality test above proves nothing.
TEST(FoldScaleAxis, MovingNegativeScalesAcrossReluIsCaught) {
  auto model = frontend::zoo_model("resnet-18", zoo_shape());
  ASSERT_TRUE(model);
  PassContext ctx;
  ctx.opt_level = 3;
  PipelineOptions unsafe;
  unsafe.fold_scale.unsafe_ignore_sign = true;
  auto bad = run_pipeline(standard_pipeline(unsafe), *model, ctx);
  ASSERT_TRUE(bad);
  const auto input = zoo_input();
  auto want = graph::interpret(*model, input);
  auto got = graph::interpret(*bad, input);
  ASSERT_TRUE(want && got);
  EXPECT_GT(relative_error((*got)[0], (*want)[0]), 100 * kTolerance);
}

TEST(FoldScaleAxis, FoldsForwardIntoTheNextConvWhenTheScaleIsPositive) {
  // x * s + t -> relu -> conv: with s > 0 the scale reaches the conv's input channels.
  Graph g;
  auto x = g.add_input("x", {graph::DType::kFloat32, {1, 2, 5, 5}});
  auto s = g.add_constant("s", Tensor::from_floats({2, 1, 1}, {0.5f, 2.0f}));
  auto t = g.add_constant("t", Tensor::from_floats({2, 1, 1}, {0.1f, -0.3f}));
  Tensor wa = Tensor::zeros({3, 2, 3, 3});
  fill_uniform(wa, 9);
  auto w = g.add_constant("w", wa);
  auto m = *g.add_node(OpKind::kMultiply, "m", {x, s});
  auto a = *g.add_node(OpKind::kAdd, "a", {m, t});
  auto r = *g.add_node(OpKind::kRelu, "r", {a});
  g.add_output(*g.add_node(OpKind::kConv2d, "c", {r, w},
                           graph::Attrs{{"strides", std::vector<int64_t>{1, 1}},
                                        {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                        {"dilations", std::vector<int64_t>{1, 1}},
                                        {"groups", int64_t{1}}}));
  auto folded = run_pass(fold_scale_axis(), g, PassContext{});
  ASSERT_TRUE(folded);
  EXPECT_EQ(count(*folded, OpKind::kMultiply), 0);
  Tensor in = Tensor::zeros({1, 2, 5, 5});
  fill_uniform(in, 10);
  const std::map<std::string, Tensor> input{{"x", in}};
  EXPECT_LT(
      relative_error((*graph::interpret(*folded, input))[0], (*graph::interpret(g, input))[0]),
      1e-5);
  // A negative scale must stay put.
  Graph neg = g;
  auto s2 = neg.add_constant("s2", Tensor::from_floats({2, 1, 1}, {0.5f, -2.0f}));
  auto& nodes = neg.mutable_nodes();
  nodes[0].inputs[1] = s2;
  auto kept = run_pass(fold_scale_axis(), neg, PassContext{});
  ASSERT_TRUE(kept);
  EXPECT_EQ(count(*kept, OpKind::kMultiply), 1);
}

// The rule: direct invocation always runs (prerequisites first); a pipeline filters by level.
TEST(PassRule, DirectInvocationRunsWhateverTheOptLevel) {
  auto model = frontend::zoo_model("resnet-18", zoo_shape());
  ASSERT_TRUE(model);
  std::vector<std::string> ran;
  PassContext ctx;
  ctx.opt_level = 0;
  ctx.after_pass = [&](const std::string& name, const Graph&) { ran.push_back(name); };
  auto g = run_pass(fold_scale_axis(), *model, ctx);
  ASSERT_TRUE(g);
  EXPECT_EQ(ran, (std::vector<std::string>{"SimplifyInference", "FoldScaleAxis"}));
  EXPECT_EQ(count(*g, OpKind::kBatchNorm), 0);
  EXPECT_EQ(count(*g, OpKind::kMultiply), 0);
}

TEST(PassRule, PipelineSkipsPassesAboveTheOptLevel) {
  auto model = frontend::zoo_model("resnet-18", zoo_shape());
  ASSERT_TRUE(model);
  std::vector<std::string> ran;
  PassContext ctx;
  ctx.opt_level = 2;
  ctx.after_pass = [&](const std::string& name, const Graph&) { ran.push_back(name); };
  auto g = run_pipeline({fold_scale_axis()}, *model, ctx);
  ASSERT_TRUE(g);
  EXPECT_TRUE(ran.empty());
  EXPECT_EQ(count(*g, OpKind::kBatchNorm), 20);

  ran.clear();
  ASSERT_TRUE(run_pipeline(standard_pipeline(), *model, ctx));
  EXPECT_EQ(ran, (std::vector<std::string>{"SimplifyInference", "FoldPad", "FoldConstant",
                                           "FoldConstant", "DeadCodeElimination", "FuseOps"}));
  ran.clear();
  ctx.opt_level = 3;
  ASSERT_TRUE(run_pipeline(standard_pipeline(), *model, ctx));
  EXPECT_EQ(ran,
            (std::vector<std::string>{"SimplifyInference", "FoldPad", "FoldConstant",
                                      "SimplifyInference", "FoldScaleAxis", "DenseFromMatMul",
                                      "PadGemmShapes", "FuseGelu", "FuseLayerNorm", "AlterOpLayout",
                                      "FoldConstant", "DeadCodeElimination", "FuseOps"}));
}

TEST(AlterOpLayout, UsesTheGivenBlocksAndTransformsOnlyAtTheEdges) {
  auto model = frontend::zoo_model("resnet-18", zoo_shape());
  ASSERT_TRUE(model);
  AlterOpLayoutOptions layout;
  layout.choose_blocks = [](const schedule_space::Conv2dWorkload& w) {
    return ConvBlocks{w.in_channels % 8 == 0 ? 8 : w.in_channels, 32};
  };
  auto g = run_pass(alter_op_layout(layout), *model, PassContext{});
  ASSERT_TRUE(g) << g.error().message;
  for (const auto& n : g->nodes())
    if (n.op == OpKind::kConv2dNCHWc) {
      EXPECT_EQ(n.attrs.get_int("oc_bn", 0), 32) << n.name;
    }
  const auto input = zoo_input();
  EXPECT_LT(
      relative_error((*graph::interpret(*g, input))[0], (*graph::interpret(*model, input))[0]),
      kTolerance);
}

// Per-node blocks (what graph-best records give): a conv whose output block differs from its
// consumer's input block gets exactly one transform between them, and nowhere else changes.
TEST(AlterOpLayout, PerNodeBlocksInsertTransformsExactlyWhereNeighboursDisagree) {
  auto model = frontend::zoo_model("resnet-18", zoo_shape());
  ASSERT_TRUE(model);
  auto transforms = [&](std::optional<ConvBlocks> odd) {
    AlterOpLayoutOptions layout;
    layout.choose_blocks = [](const schedule_space::Conv2dWorkload& w) {
      return ConvBlocks{w.in_channels % 8 == 0 ? 8 : w.in_channels, 8};
    };
    layout.node_blocks = [odd](const std::string& node) -> std::optional<ConvBlocks> {
      if (node == "layer1.0.1.conv") return odd;
      return std::nullopt;
    };
    // The whole pipeline (batch norms folded first, as compile runs it).
    PipelineOptions pipeline;
    pipeline.layout = layout;
    PassContext ctx;
    ctx.opt_level = 3;
    auto g = run_pipeline(standard_pipeline(pipeline), *model, ctx);
    EXPECT_TRUE(g) << g.error().message;
    std::vector<std::pair<int64_t, int64_t>> out;
    if (!g) return out;
    for (const auto& n : g->nodes()) {
      if (n.name == "layer1.0.1.conv" && odd) {
        EXPECT_EQ(n.attrs.get_int("ic_bn", 0), odd->ic_bn);
        EXPECT_EQ(n.attrs.get_int("oc_bn", 0), odd->oc_bn);
      }
      if (n.op != OpKind::kLayoutTransform) continue;
      const auto a = graph::attrs_as<graph::LayoutTransformAttrs>(n.attrs);
      EXPECT_NE(a.from_block, a.to_block) << n.name << " is a transform to the same layout";
      out.emplace_back(a.from_block, a.to_block);
    }
    const auto input = zoo_input();
    EXPECT_LT(
        relative_error((*graph::interpret(*g, input))[0], (*graph::interpret(*model, input))[0]),
        kTolerance);
    std::sort(out.begin(), out.end());
    return out;
  };
  const auto uniform = transforms(std::nullopt);
  // layer1.0.1.conv writes 16-channel blocks that its only consumer (layer1.0.2.conv, through
  // its relu) reads as 8: one more transform, 16 -> 8.
  auto with_oc = transforms(ConvBlocks{8, 16});
  auto expected = uniform;
  expected.emplace_back(16, 8);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(with_oc, expected);
  // It reads 16-channel blocks that its producer writes as 8: one more transform, 8 -> 16.
  auto with_ic = transforms(ConvBlocks{16, 8});
  expected = uniform;
  expected.emplace_back(8, 16);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(with_ic, expected);
  // Its own choice equal to its neighbours': nothing added.
  EXPECT_EQ(transforms(ConvBlocks{8, 8}), uniform);
}

TEST(FuseOps, ConvTakesItsEpilogueIntoItsGroup) {
  auto model = frontend::zoo_model("resnet-18", zoo_shape());
  PassContext ctx;
  ctx.opt_level = 3;
  auto g = run_pipeline(standard_pipeline(), *model, ctx);
  ASSERT_TRUE(g);
  // layer1.0: conv -> add(bias) -> add(shortcut) -> relu, one group.
  int group = -1;
  for (const auto& n : g->nodes()) {
    if (n.name == "layer1.0.2.conv") group = n.fusion_group;
    if (n.name == "layer1.0.add" || n.name == "layer1.0.relu") {
      EXPECT_EQ(n.fusion_group, group) << n.name;
    }
  }
  EXPECT_GE(group, 0);
  for (const auto& n : g->nodes()) EXPECT_GE(n.fusion_group, 0) << n.name;
}

TEST(DeadCodeElimination, RemovesUnusedNodesAndConstants) {
  Graph g;
  auto x = g.add_input("x", {graph::DType::kFloat32, {1, 4}});
  auto c = g.add_constant("unused_weight", Tensor::zeros(graph::DType::kFloat32, {4}));
  auto dead = *g.add_node(OpKind::kAdd, "dead", {x, c});
  (void)dead;
  g.add_output(*g.add_node(OpKind::kRelu, "live", {x}));
  auto out = run_pass(dead_code_elimination(), g, PassContext{});
  ASSERT_TRUE(out);
  ASSERT_EQ(out->nodes().size(), 1u);
  EXPECT_EQ(out->nodes()[0].name, "live");
  for (const auto& v : out->values()) EXPECT_NE(v.name, "unused_weight");
}

// Zero pads in front of a conv2d and of average pools move into their pads; a pool that does
// not count its own padding, and a pad of another value, keep their Pad. The answer is the
// interpreter's before the pass, exactly.
TEST(FoldPad, ZeroPadsMoveIntoConvAndCountingAvgPoolsOnly) {
  Graph g;
  auto x = g.add_input("x", {graph::DType::kFloat32, {1, 3, 7, 7}});
  auto w = g.add_constant("w", Tensor::from_floats({4, 3, 3, 3}, std::vector<float>(108, 0.25f)));
  auto pad = [&](const std::string& name, graph::ValueId in, double value) {
    return *g.add_node(OpKind::kPad, name, {in},
                       graph::Attrs{{"pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 2, 1}},
                                    {"mode", int64_t{0}},
                                    {"value", value}});
  };
  graph::Pool2dAttrs pool;
  pool.kernel = {3, 3};
  const auto conv = *g.add_node(OpKind::kConv2d, "conv", {pad("p_conv", x, 0), w},
                                graph::to_attrs(graph::Conv2dAttrs{}));
  const auto counted =
      *g.add_node(OpKind::kAvgPool2d, "avg", {pad("p_avg", x, 0)}, graph::to_attrs(pool));
  graph::Pool2dAttrs own = pool;
  own.pads = {1, 1, 1, 1};  // its own pads, not counted: the explicit zeros must stay elements
  const auto kept =
      *g.add_node(OpKind::kAvgPool2d, "avg_own", {pad("p_own", x, 0)}, graph::to_attrs(own));
  const auto ones =
      *g.add_node(OpKind::kAvgPool2d, "avg_ones", {pad("p_ones", x, 1.0)}, graph::to_attrs(pool));
  for (auto v : {conv, counted, kept, ones}) g.add_output(v);
  auto folded = run_pass(fold_pad(), g, PassContext{});
  ASSERT_TRUE(folded) << folded.error().message;
  auto cleaned = run_pass(dead_code_elimination(), *folded, PassContext{});
  ASSERT_TRUE(cleaned);
  std::vector<std::string> pads_left;
  for (const auto& n : cleaned->nodes())
    if (n.op == OpKind::kPad) pads_left.push_back(n.name);
  EXPECT_EQ(pads_left, (std::vector<std::string>{"p_own", "p_ones"}));
  Tensor in = Tensor::zeros(graph::DType::kFloat32, {1, 3, 7, 7});
  for (int64_t i = 0; i < in.size(); ++i) in.f32[i] = std::sin(0.37 * i) + 0.5f;
  auto want = graph::interpret(g, {{"x", in}});
  auto got = graph::interpret(*cleaned, {{"x", in}});
  ASSERT_TRUE(want && got);
  for (size_t o = 0; o < want->size(); ++o) {
    EXPECT_EQ((*got)[o].shape, (*want)[o].shape) << o;
    EXPECT_LT(relative_error((*got)[o], (*want)[o]), 1e-6) << "output " << o;
  }
}

}  // namespace
// A transformer's linear layer, [batch, tokens, K] x constant [K, N], becomes a dense over the
// rows; a matmul of two activations (attention's) and one by a non-constant stay matmuls.
TEST(DenseFromMatMul, ConstantWeightsBecomeDenseOverTheRows) {
  Graph g;
  auto x = g.add_input("x", {graph::DType::kFloat32, {2, 3, 4}});
  auto y = g.add_input("y", {graph::DType::kFloat32, {2, 4, 3}});
  std::vector<float> wv(20);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.7 * i);
  auto w = g.add_constant("w", Tensor::from_floats({4, 5}, wv));
  const auto linear = *g.add_node(OpKind::kMatMul, "linear", {x, w});
  const auto attention = *g.add_node(OpKind::kMatMul, "attention", {x, y});
  g.add_output(linear);
  g.add_output(attention);
  auto rewritten = run_pass(dense_from_matmul(), g, PassContext{});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  EXPECT_EQ(count(*rewritten, OpKind::kDense), 1);
  EXPECT_EQ(count(*rewritten, OpKind::kMatMul), 1);
  Tensor a = Tensor::zeros(graph::DType::kFloat32, {2, 3, 4});
  Tensor b = Tensor::zeros(graph::DType::kFloat32, {2, 4, 3});
  for (int64_t i = 0; i < a.size(); ++i) a.f32[i] = std::sin(0.37 * i);
  for (int64_t i = 0; i < b.size(); ++i) b.f32[i] = std::sin(0.11 * i + 1);
  auto want = graph::interpret(g, {{"x", a}, {"y", b}});
  auto got = graph::interpret(*rewritten, {{"x", a}, {"y", b}});
  ASSERT_TRUE(want && got);
  for (size_t o = 0; o < want->size(); ++o) {
    EXPECT_EQ((*got)[o].shape, (*want)[o].shape) << o;
    EXPECT_LT(relative_error((*got)[o], (*want)[o]), 1e-6) << "output " << o;
  }
}

// A bias added after the MatMul (bias first, as torch exports it, or of shape [1, 1, N]) is
// added to the dense's rows before the reshape back, where the kernel's epilogue takes it; one
// that varies along another axis, or whose MatMul result is read elsewhere too, stays after.
TEST(DenseFromMatMul, TheBiasAfterTheMatMulJoinsTheDense) {
  for (int form = 0; form < 4; ++form) {
    Graph g;
    auto x = g.add_input("x", {graph::DType::kFloat32, {2, 3, 4}});
    std::vector<float> wv(20);
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.7 * i);
    auto w = g.add_constant("w", Tensor::from_floats({4, 5}, wv));
    const graph::Shape bias_shape = form == 1   ? graph::Shape{1, 1, 5}
                                    : form == 2 ? graph::Shape{3, 1}
                                                : graph::Shape{5};
    std::vector<float> bv(static_cast<size_t>(graph::num_elements(bias_shape)));
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = 0.25f * i - 0.5f;
    auto b = g.add_constant("b", Tensor::from_floats(bias_shape, bv));
    const auto product = *g.add_node(OpKind::kMatMul, "linear", {x, w});
    g.add_output(*g.add_node(OpKind::kAdd, "bias", {b, product}));
    if (form == 3) g.add_output(product);
    auto rewritten = run_pass(dense_from_matmul(), g, PassContext{});
    ASSERT_TRUE(rewritten) << rewritten.error().message;
    const graph::Node* add = nullptr;
    for (const auto& n : rewritten->nodes())
      if (n.op == OpKind::kAdd) add = &n;
    ASSERT_NE(add, nullptr);
    const bool joins = form < 2;
    EXPECT_EQ(
        rewritten->value(add->inputs[0]).producer >= 0 &&
            rewritten->nodes()[rewritten->value(add->inputs[0]).producer].op == OpKind::kDense,
        joins)
        << "form " << form;
    Tensor a = Tensor::zeros(graph::DType::kFloat32, {2, 3, 4});
    for (int64_t i = 0; i < a.size(); ++i) a.f32[i] = std::sin(0.37 * i);
    auto want = graph::interpret(g, {{"x", a}});
    auto got = graph::interpret(*rewritten, {{"x", a}});
    ASSERT_TRUE(want && got);
    for (size_t o = 0; o < want->size(); ++o) {
      EXPECT_EQ((*got)[o].shape, (*want)[o].shape) << o;
      EXPECT_LT(relative_error((*got)[o], (*want)[o]), 1e-6) << "form " << form << " output " << o;
    }
  }
}

// A dense of 67 or 87 = 3 x 29 columns (no block of 16 to 64 in whole 8-lane vectors divides it,
// as a vocabulary of 50257 = 29 x 1733 tokens) computes 80 or 96 padded columns and slices; 96
// columns, or a weight computed at run time, stay.
TEST(PadGemmShapes, DenseColumnsWithoutAWideBlockArePaddedAndSliced) {
  for (int64_t n : {67, 87, 96}) {
    Graph g;
    auto x = g.add_input("x", {graph::DType::kFloat32, {3, 8}});
    std::vector<float> wv(static_cast<size_t>(n) * 8);
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.3 * i);
    auto w = g.add_constant("w", Tensor::from_floats({n, 8}, wv));
    auto r = g.add_input("r", {graph::DType::kFloat32, {5, 8}});
    g.add_output(*g.add_node(OpKind::kDense, "head", {x, w}));
    g.add_output(*g.add_node(OpKind::kDense, "runtime", {x, r}));
    auto rewritten = run_pass(pad_gemm_shapes(), g, PassContext{});
    ASSERT_TRUE(rewritten) << rewritten.error().message;
    EXPECT_EQ(count(*rewritten, OpKind::kSlice), n != 96 ? 1 : 0) << n;
    EXPECT_EQ(count(*rewritten, OpKind::kDense), 2);
    for (const auto& node : rewritten->nodes())
      if (node.op == OpKind::kDense && rewritten->is_constant(node.inputs[1]))
        EXPECT_EQ(rewritten->type(node.inputs[1]).shape[0], n == 67 ? 80 : 96);
    Tensor a = Tensor::zeros(graph::DType::kFloat32, {3, 8});
    Tensor b = Tensor::zeros(graph::DType::kFloat32, {5, 8});
    for (int64_t i = 0; i < a.size(); ++i) a.f32[i] = std::sin(0.37 * i);
    for (int64_t i = 0; i < b.size(); ++i) b.f32[i] = std::sin(0.11 * i);
    auto want = graph::interpret(g, {{"x", a}, {"r", b}});
    auto got = graph::interpret(*rewritten, {{"x", a}, {"r", b}});
    ASSERT_TRUE(want && got);
    for (size_t o = 0; o < want->size(); ++o) {
      EXPECT_EQ((*got)[o].shape, (*want)[o].shape) << o;
      EXPECT_EQ((*got)[o].f32, (*want)[o].f32) << "output " << o;
    }
  }
}

// Rows no tile of 4 divides (19, as a ViT's 197 tokens) are padded to 24, in a dense (whose weight
// may be computed at run time) and in a batch matmul, whose 37 columns are padded to 48 too; the
// sliced results equal the unpadded ones exactly (the padding multiplies zeros).
TEST(PadGemmShapes, AwkwardRowsAndBatchMatmulColumnsArePaddedAndSliced) {
  Graph g;
  auto x = g.add_input("x", {graph::DType::kFloat32, {19, 8}});
  auto r = g.add_input("r", {graph::DType::kFloat32, {6, 8}});
  auto a = g.add_input("a", {graph::DType::kFloat32, {2, 19, 5}});
  auto b = g.add_input("b", {graph::DType::kFloat32, {2, 5, 37}});
  g.add_output(*g.add_node(OpKind::kDense, "dense", {x, r}));
  g.add_output(*g.add_node(OpKind::kMatMul, "scores", {a, b}));
  auto rewritten = run_pass(pad_gemm_shapes(), g, PassContext{});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  EXPECT_EQ(count(*rewritten, OpKind::kPad), 3);
  EXPECT_EQ(count(*rewritten, OpKind::kSlice), 2);
  for (const auto& node : rewritten->nodes()) {
    if (node.op == OpKind::kDense)
      EXPECT_EQ(rewritten->type(node.output).shape, (graph::Shape{24, 6}));
    if (node.op == OpKind::kMatMul)
      EXPECT_EQ(rewritten->type(node.output).shape, (graph::Shape{2, 24, 48}));
  }
  std::map<std::string, Tensor> in;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, graph::Shape>>{
           {"x", {19, 8}}, {"r", {6, 8}}, {"a", {2, 19, 5}}, {"b", {2, 5, 37}}}) {
    Tensor t = Tensor::zeros(graph::DType::kFloat32, shape);
    for (int64_t i = 0; i < t.size(); ++i) t.f32[i] = std::sin(0.37 * i + name[0]);
    in[name] = t;
  }
  auto want = graph::interpret(g, in);
  auto got = graph::interpret(*rewritten, in);
  ASSERT_TRUE(want && got);
  for (size_t o = 0; o < want->size(); ++o) {
    EXPECT_EQ((*got)[o].shape, (*want)[o].shape) << o;
    EXPECT_EQ((*got)[o].f32, (*want)[o].f32) << "output " << o;
  }
}

// A bias added after a padded dense (as DenseFromMatMul leaves it) is added to the padded result,
// before the slice, where the dense kernel's epilogue takes it.
TEST(PadGemmShapes, TheBiasOfAPaddedDenseComesBeforeTheSlice) {
  Graph g;
  auto x = g.add_input("x", {graph::DType::kFloat32, {19, 8}});
  std::vector<float> wv(67 * 8), bv(67);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.3 * i);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = 0.1f * i;
  auto w = g.add_constant("w", Tensor::from_floats({67, 8}, wv));
  auto b = g.add_constant("b", Tensor::from_floats({67}, bv));
  auto y = *g.add_node(OpKind::kDense, "dense", {x, w});
  g.add_output(*g.add_node(OpKind::kAdd, "bias", {y, b}));
  auto rewritten = run_pass(pad_gemm_shapes(), g, PassContext{});
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  ASSERT_EQ(count(*rewritten, OpKind::kAdd), 1);
  for (const auto& node : rewritten->nodes()) {
    if (node.op != OpKind::kAdd) continue;
    EXPECT_EQ(rewritten->type(node.output).shape, (graph::Shape{24, 80}));
    EXPECT_EQ(rewritten->nodes()[rewritten->value(node.inputs[0]).producer].op, OpKind::kDense);
  }
  Tensor a = Tensor::zeros(graph::DType::kFloat32, {19, 8});
  for (int64_t i = 0; i < a.size(); ++i) a.f32[i] = std::sin(0.37 * i);
  auto want = graph::interpret(g, {{"x", a}});
  auto got = graph::interpret(*rewritten, {{"x", a}});
  ASSERT_TRUE(want && got);
  EXPECT_EQ((*got)[0].shape, (*want)[0].shape);
  EXPECT_EQ((*got)[0].f32, (*want)[0].f32);
}

// LayerNorm as opsets 11-16 export it becomes one layer_norm node, with the same values; the
// same chain whose centred value is also an output keeps its nodes.
TEST(FuseLayerNorm, TheExportedChainBecomesOneNodeUnlessItsPartsAreReadElsewhere) {
  for (bool shared : {false, true}) {
    Graph g;
    auto x = g.add_input("x", {graph::DType::kFloat32, {2, 3, 8}});
    graph::ReduceAttrs last;
    last.axes = {2};
    const graph::Attrs mean_attrs = graph::to_attrs(last);
    std::vector<float> gv(8), bv(8);
    for (int i = 0; i < 8; ++i) gv[i] = 0.5f + 0.1f * i, bv[i] = -0.2f + 0.05f * i;
    auto mean = *g.add_node(OpKind::kReduceMean, "mean", {x}, mean_attrs);
    auto d = *g.add_node(OpKind::kSubtract, "d", {x, mean});
    auto sq = *g.add_node(OpKind::kMultiply, "sq", {d, d});
    auto var = *g.add_node(OpKind::kReduceMean, "var", {sq}, mean_attrs);
    auto eps = g.add_constant("eps", Tensor::from_floats({}, {1e-5f}));
    auto shifted = *g.add_node(OpKind::kAdd, "shifted", {var, eps});
    auto root = *g.add_node(OpKind::kSqrt, "root", {shifted});
    auto normed = *g.add_node(OpKind::kDivide, "normed", {d, root});
    auto scaled = *g.add_node(OpKind::kMultiply, "scaled",
                              {normed, g.add_constant("gamma", Tensor::from_floats({8}, gv))});
    auto y = *g.add_node(OpKind::kAdd, "y",
                         {scaled, g.add_constant("beta", Tensor::from_floats({8}, bv))});
    g.add_output(y);
    if (shared) g.add_output(d);
    auto fused = run_pass(fuse_layer_norm(), g, PassContext{});
    ASSERT_TRUE(fused) << fused.error().message;
    auto cleaned = run_pass(dead_code_elimination(), *fused, PassContext{});
    ASSERT_TRUE(cleaned);
    EXPECT_EQ(count(*cleaned, OpKind::kLayerNorm), shared ? 0 : 1);
    EXPECT_EQ(count(*cleaned, OpKind::kReduceMean), shared ? 2 : 0);
    Tensor in = Tensor::zeros(graph::DType::kFloat32, {2, 3, 8});
    for (int64_t i = 0; i < in.size(); ++i) in.f32[i] = std::sin(0.9 * i) * (1 + i % 5);
    auto want = graph::interpret(g, {{"x", in}});
    auto got = graph::interpret(*cleaned, {{"x", in}});
    ASSERT_TRUE(want && got);
    EXPECT_LT(relative_error((*got)[0], (*want)[0]), 1e-5);
  }
}

// GELU's formula in the forms and orders exporters write it ((x * a) * 0.5, (a * 0.5) * x,
// (x * 0.5) * a; a = 1 + erf(x / sqrt 2), 1 + erf(x * (1 / sqrt 2)), or GPT-2's 1 + tanh(sqrt(2 /
// pi) (x + 0.044715 x^3)) with x^3 as x * (x * x) or pow(x, 3)) becomes one gelu node of its form,
// computed before the reshape between it and x's producer, with the formula's values; one whose
// erf is also read elsewhere, or whose constant is not 0.5, keeps its nodes.
TEST(FuseGelu, TheFormulaBecomesOneNodeBeforeTheReshapeUnlessItsPartsAreReadElsewhere) {
  enum class Form {
    kXaHalf,
    kAHalfX,
    kXHalfA,
    kErfByMultiply,
    kTanhCube,
    kTanhPow,
    kSharedErf,
    kWrongHalf
  };
  for (Form form : {Form::kXaHalf, Form::kAHalfX, Form::kXHalfA, Form::kErfByMultiply,
                    Form::kTanhCube, Form::kTanhPow, Form::kSharedErf, Form::kWrongHalf}) {
    Graph g;
    auto in = g.add_input("in", {graph::DType::kFloat32, {6, 8}});
    auto produced = *g.add_node(OpKind::kNeg, "producer", {in});
    auto x = *g.add_node(OpKind::kReshape, "unrows", {produced}, {{"shape", graph::Ints{2, 3, 8}}});
    auto scalar = [&](const char* name, float v) {
      return g.add_constant(name, Tensor::from_floats({}, {v}));
    };
    const bool tanh = form == Form::kTanhCube || form == Form::kTanhPow;
    graph::ValueId inner;
    if (tanh) {
      auto cube = form == Form::kTanhPow
                      ? *g.add_node(OpKind::kPow, "cube", {x, scalar("three", 3.0f)})
                      : *g.add_node(OpKind::kMultiply, "cube",
                                    {x, *g.add_node(OpKind::kMultiply, "square", {x, x})});
      auto sum =
          *g.add_node(OpKind::kAdd, "sum",
                      {x, *g.add_node(OpKind::kMultiply, "c", {scalar("k", 0.044715f), cube})});
      inner = *g.add_node(OpKind::kTanh, "tanh",
                          {*g.add_node(OpKind::kMultiply, "w", {scalar("s", 0.7978845608f), sum})});
    } else {
      graph::ValueId u =
          form == Form::kErfByMultiply
              ? *g.add_node(OpKind::kMultiply, "scaled", {scalar("r", 0.70710678f), x})
              : *g.add_node(OpKind::kDivide, "scaled", {x, scalar("sqrt2", 1.41421354f)});
      inner = *g.add_node(OpKind::kErf, "erf", {u});
    }
    auto a = *g.add_node(OpKind::kAdd, "one_plus", {scalar("one", 1.0f), inner});
    const float half = form == Form::kWrongHalf ? 0.25f : 0.5f;
    graph::ValueId y;
    if (form == Form::kAHalfX) {
      y = *g.add_node(OpKind::kMultiply, "y",
                      {x, *g.add_node(OpKind::kMultiply, "h", {a, scalar("half", half)})});
    } else if (form == Form::kXHalfA) {
      y = *g.add_node(OpKind::kMultiply, "y",
                      {*g.add_node(OpKind::kMultiply, "h", {scalar("half", half), x}), a});
    } else {
      y = *g.add_node(OpKind::kMultiply, "y",
                      {*g.add_node(OpKind::kMultiply, "m", {x, a}), scalar("half", half)});
    }
    g.add_output(y);
    if (form == Form::kSharedErf) g.add_output(inner);
    auto fused = run_pass(fuse_gelu(), g, PassContext{});
    ASSERT_TRUE(fused) << fused.error().message;
    auto cleaned = run_pass(dead_code_elimination(), *fused, PassContext{});
    ASSERT_TRUE(cleaned);
    const bool fuses = form != Form::kSharedErf && form != Form::kWrongHalf;
    EXPECT_EQ(count(*cleaned, OpKind::kGelu), fuses ? 1 : 0) << static_cast<int>(form);
    EXPECT_EQ(count(*cleaned, tanh ? OpKind::kTanh : OpKind::kErf), fuses ? 0 : 1)
        << static_cast<int>(form);
    for (const graph::Node& n : cleaned->nodes())
      if (n.op == OpKind::kGelu) {  // on the producer's [6, 8] rows, the reshape after it
        EXPECT_EQ(cleaned->type(n.inputs[0]).shape, (graph::Shape{6, 8}));
        EXPECT_EQ(graph::attrs_as<graph::GeluAttrs>(n.attrs).tanh, tanh ? 1 : 0);
      }
    Tensor data = Tensor::zeros(graph::DType::kFloat32, {6, 8});
    for (int64_t i = 0; i < data.size(); ++i) data.f32[i] = 3.0f * std::sin(0.7 * i);
    auto want = graph::interpret(g, {{"in", data}});
    auto got = graph::interpret(*cleaned, {{"in", data}});
    ASSERT_TRUE(want && got);
    EXPECT_LT(relative_error((*got)[0], (*want)[0]), 1e-6) << static_cast<int>(form);
  }
}

// Attention as exporters write it, in its variants (a scalar Mul on either side or a Div, a mask
// added on either side, neither), becomes one attention node with the scale as an attribute and
// the unfused graph's values; a score read elsewhere too, a softmax over another axis, or a
// target that serves no attention keeps the chain.
TEST(FuseAttention, TheExportedChainBecomesOneNodeWhereATemplateServesIt) {
  enum class Form {
    kMulLeft,
    kDiv,
    kNoScaleNoMask,
    kTwoMasks,
    kCausalWhere,
    kScoresReadElsewhere,
    kOtherAxis,
    kUnserved,
    kQueryDivided,             // torch's MultiheadAttention: q / sqrt(d) before the matmul
    kBothOperandsScaled,       // its SDPA export: q and k^T each times sqrt(scale)
    kScaledQueryReadElsewhere  // q / 2 also an output: the division stays, the scale is 1
  };
  for (Form form :
       {Form::kMulLeft, Form::kDiv, Form::kNoScaleNoMask, Form::kTwoMasks, Form::kCausalWhere,
        Form::kScoresReadElsewhere, Form::kOtherAxis, Form::kUnserved, Form::kQueryDivided,
        Form::kBothOperandsScaled, Form::kScaledQueryReadElsewhere}) {
    Graph g;
    const graph::ValueId q_in = g.add_input("q", {graph::DType::kFloat32, {2, 5, 4}});
    const graph::ValueId kt_in = g.add_input("kt", {graph::DType::kFloat32, {2, 4, 6}});
    auto v = g.add_input("v", {graph::DType::kFloat32, {2, 6, 3}});
    auto mask = g.add_input("mask", {graph::DType::kFloat32, {6}});
    graph::ValueId q = q_in, kt = kt_in;
    const float root_half = 0.70710677f;
    if (form == Form::kQueryDivided || form == Form::kScaledQueryReadElsewhere)
      q = *g.add_node(OpKind::kDivide, "q.scale",
                      {q, g.add_constant("two", Tensor::from_floats({}, {2.0f}))});
    if (form == Form::kBothOperandsScaled) {
      q = *g.add_node(OpKind::kMultiply, "q.scale",
                      {q, g.add_constant("rq", Tensor::from_floats({}, {root_half}))});
      kt = *g.add_node(OpKind::kMultiply, "kt.scale",
                       {g.add_constant("rk", Tensor::from_floats({}, {root_half})), kt});
    }
    auto scores = *g.add_node(OpKind::kMatMul, "qk", {q, kt});
    graph::ValueId x = scores;
    if (form == Form::kMulLeft)
      x = *g.add_node(OpKind::kMultiply, "scale",
                      {g.add_constant("c", Tensor::from_floats({}, {0.5f})), x});
    if (form == Form::kDiv || form == Form::kScoresReadElsewhere || form == Form::kOtherAxis ||
        form == Form::kUnserved)
      x = *g.add_node(OpKind::kDivide, "scale",
                      {x, g.add_constant("c", Tensor::from_floats({}, {2.0f}))});
    if (form != Form::kNoScaleNoMask) x = *g.add_node(OpKind::kAdd, "mask", {x, mask});
    // A ranged artifact's padding mask after the model's own: the node adds the two.
    // GPT-2's causal mask: Where(a constant lower triangle, x, float's lowest).
    if (form == Form::kCausalWhere) {
      Tensor lower = Tensor::zeros(graph::DType::kBool, {5, 6});
      for (int64_t r = 0; r < 5; ++r)
        for (int64_t c = 0; c <= r + 1; ++c) lower.i64[r * 6 + c] = 1;
      x = *g.add_node(OpKind::kWhere, "causal",
                      {g.add_constant("lower", lower), x,
                       g.add_constant("lowest", Tensor::from_floats({}, {-3.4028235e38f}))});
    }
    if (form == Form::kTwoMasks)
      x = *g.add_node(OpKind::kAdd, "padding",
                      {g.add_input("pad", {graph::DType::kFloat32, {2, 1, 6}}), x});
    const int64_t axis = form == Form::kOtherAxis ? 1 : -1;
    auto p = *g.add_node(OpKind::kSoftmax, "softmax", {x}, {{"axis", axis}});
    g.add_output(*g.add_node(OpKind::kMatMul, "pv", {p, v}));
    if (form == Form::kScoresReadElsewhere) g.add_output(scores);
    if (form == Form::kScaledQueryReadElsewhere) g.add_output(q);
    auto served = [form](const schedule_space::Workload& w) {
      return form != Form::kUnserved &&
             std::holds_alternative<schedule_space::AttentionWorkload>(w);
    };
    auto fused = run_pass(fuse_attention(served), g, PassContext{});
    ASSERT_TRUE(fused) << fused.error().message;
    auto cleaned = run_pass(dead_code_elimination(), *fused, PassContext{});
    ASSERT_TRUE(cleaned);
    const bool fuses =
        form != Form::kScoresReadElsewhere && form != Form::kOtherAxis && form != Form::kUnserved;
    EXPECT_EQ(count(*cleaned, OpKind::kAttention), fuses ? 1 : 0) << static_cast<int>(form);
    EXPECT_EQ(count(*cleaned, OpKind::kSoftmax), fuses ? 0 : 1) << static_cast<int>(form);
    // The scales before the matmul are folded where nothing else reads the scaled operand.
    const bool divided_kept = form == Form::kScaledQueryReadElsewhere;
    EXPECT_EQ(count(*cleaned, OpKind::kDivide) + count(*cleaned, OpKind::kMultiply),
              fuses ? (divided_kept ? 1 : 0) : 1)
        << static_cast<int>(form);
    if (fuses) {
      for (const auto& n : cleaned->nodes())
        if (n.op == OpKind::kAttention) {
          EXPECT_NEAR(graph::attrs_as<graph::AttentionAttrs>(n.attrs).scale,
                      form == Form::kMulLeft || form == Form::kDiv || form == Form::kQueryDivided ||
                              form == Form::kBothOperandsScaled
                          ? 0.5
                          : 1.0,
                      1e-7)
              << static_cast<int>(form);
          // q itself (an input of the graph), or the division read elsewhere.
          EXPECT_EQ(cleaned->value(n.inputs[0]).producer < 0, !divided_kept)
              << static_cast<int>(form);
        }
    }
    std::map<std::string, Tensor> in;
    for (auto [name, shape] :
         std::vector<std::pair<std::string, graph::Shape>>{{"q", {2, 5, 4}},
                                                           {"kt", {2, 4, 6}},
                                                           {"v", {2, 6, 3}},
                                                           {"mask", {6}},
                                                           {"pad", {2, 1, 6}}}) {
      Tensor t = Tensor::zeros(graph::DType::kFloat32, shape);
      for (int64_t i = 0; i < t.size(); ++i) t.f32[i] = std::sin(0.7 * i + shape.size());
      if (name != "pad" || form == Form::kTwoMasks) in[name] = t;
    }
    auto want = graph::interpret(g, in);
    auto got = graph::interpret(*cleaned, in);
    ASSERT_TRUE(want && got);
    EXPECT_LT(relative_error((*got)[0], (*want)[0]), 1e-6);
    if (form == Form::kScaledQueryReadElsewhere) EXPECT_EQ((*got)[1].f32, (*want)[1].f32);
  }
}

}  // namespace tensortune::passes
