// Compiled networks whose pads and slices are views: a padded GEMM's rows (PadGemmShapes) are
// its operand's buffer planned a few rows longer, and its result's first rows a prefix of the
// padded one, so neither copies; the pad's step zeroes only the added rows. A GELU between two
// padded GEMMs is the first one's epilogue. The compiled network
// equals the interpreter, also where the arena left another tensor's values in those rows.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/driver/compile.h"
#include "compiler/graph/interpreter.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/runtime/artifact.h"
#include "compiler/runtime/executor.h"
#include "tests/backend/network_test_util.h"

namespace tensortune {
namespace {

using graph::DType;
using graph::Graph;
using graph::Ints;
using graph::OpKind;
using graph::Tensor;
using graph::ValueId;
using testing::random_input;
using testing::relative_error;

std::unique_ptr<runtime::Executable> load(const runtime::CompiledNetwork& net, int threads) {
  auto back = runtime::deserialize_network(runtime::serialize_network(net), "test");
  EXPECT_TRUE(back) << back.error().message;
  if (!back) return nullptr;
  auto exe = runtime::Executable::load(std::make_shared<runtime::CompiledNetwork>(*back), threads);
  EXPECT_TRUE(exe) << exe.error().message;
  return exe ? std::move(*exe) : nullptr;
}

/// How many of `plan`'s views are of nodes of kind `op` in `g`.
int views_of(const Graph& g, const graph::MemoryPlan& plan, OpKind op) {
  int count = 0;
  for (const graph::BufferView& v : plan.views)
    count += g.nodes()[static_cast<size_t>(g.value(v.value).producer)].op == op;
  return count;
}

ValueId scalar(Graph& g, const std::string& name, float v) {
  return g.add_constant(name, Tensor::from_floats({}, {v}));
}

// A transformer's MLP block at 37 tokens (more than 16, not a multiple of 4: padded to 40 rows
// as a ViT's 197 are to 200): layer norm, dense + bias, GELU in its erf form, dense + bias, the
// residual add.
Graph mlp_block(int64_t tokens) {
  constexpr int64_t kDim = 32, kHidden = 48;
  Graph g("mlp_block");
  const ValueId x = g.add_input("x", {DType::kFloat32, {1, tokens, kDim}});
  const ValueId norm = *g.add_node(OpKind::kLayerNorm, "norm",
                                   {x, g.add_constant("gamma", random_input({kDim}, 2)),
                                    g.add_constant("beta", random_input({kDim}, 3))},
                                   {{"axis", int64_t{-1}}, {"epsilon", 1e-5}});
  auto linear = [&](const std::string& name, ValueId in, int64_t k, int64_t n, uint32_t seed) {
    const ValueId product = *g.add_node(
        OpKind::kMatMul, name, {in, g.add_constant(name + ".w", random_input({k, n}, seed))});
    return *g.add_node(OpKind::kAdd, name + ".bias",
                       {product, g.add_constant(name + ".b", random_input({n}, seed + 1))});
  };
  const ValueId h = linear("fc1", norm, kDim, kHidden, 4);
  const ValueId e =
      *g.add_node(OpKind::kErf, "erf",
                  {*g.add_node(OpKind::kDivide, "div", {h, scalar(g, "sqrt2", std::sqrt(2.0f))})});
  const ValueId gelu = *g.add_node(
      OpKind::kMultiply, "half",
      {*g.add_node(OpKind::kMultiply, "times_x",
                   {h, *g.add_node(OpKind::kAdd, "one_plus", {e, scalar(g, "one", 1.0f)})}),
       scalar(g, "half_c", 0.5f)});
  g.add_output(*g.add_node(OpKind::kAdd, "residual", {x, linear("fc2", gelu, kHidden, kDim, 6)}));
  return g;
}

TEST(BufferViews, APaddedGemmsPadsAndSlicesCopyNothingAndTheBlockEqualsTheInterpreter) {
  const Graph model = mlp_block(37);
  auto net = driver::compile_network(model, driver::CompileOptions{});
  ASSERT_TRUE(net) << net.error().message;
  // The GELU (its erf formula, FuseGelu) is fc1's epilogue, computed before the slice.
  bool gelu_fused = false;
  for (const runtime::Step& step : net->steps)
    gelu_fused |= step.kind == runtime::Step::Kind::kKernel && step.label == "dense+add+gelu";
  EXPECT_TRUE(gelu_fused);
  const graph::MemoryPlan plan = graph::plan_memory(net->graph, 64, /*views=*/true);
  // fc2's rows padded after the GELU, and both results' first 37 rows (fc1's operand is the
  // layer norm of the graph's input: a buffer of its own, its pad a view too).
  EXPECT_GE(views_of(net->graph, plan, OpKind::kPad), 2);
  EXPECT_GE(views_of(net->graph, plan, OpKind::kSlice), 2);
  for (const graph::BufferView& v : plan.views)
    if (net->graph.nodes()[static_cast<size_t>(net->graph.value(v.value).producer)].op ==
        OpKind::kPad) {
      EXPECT_LT(v.zeroed_from, v.zeroed_to);
      const auto root = std::find_if(plan.buffers.begin(), plan.buffers.end(),
                                     [&](const auto& b) { return b.value == v.root; });
      ASSERT_NE(root, plan.buffers.end());
      EXPECT_GE(root->bytes, v.zeroed_to) << "the root's buffer holds its pad's rows";
    }

  const Tensor x = random_input({1, 37, 32}, 9);
  auto want = graph::interpret(model, {{"x", x}});
  ASSERT_TRUE(want) << want.error().message;
  for (int threads : {1, 2}) {
    auto exe = load(*net, threads);
    ASSERT_TRUE(exe);
    for (int run = 0; run < 2; ++run) {  // the second run finds the first's values in the arena
      auto got = exe->run({{"x", x}});
      ASSERT_TRUE(got) << got.error().message;
      EXPECT_LT(relative_error((*got)[0], (*want)[0]), 1e-5) << threads << " threads, run " << run;
    }
  }
}

// A pad that is a view writes its zeros itself: here the arena gives the padded tensor the bytes
// a larger tensor held a step before (positive values), and a mean over the padded axis counts
// the added rows, so leftovers there would change every output.
TEST(BufferViews, AZeroPadsViewZeroesWhatTheArenaLeftInItsRows) {
  Graph g("pad_view");
  const ValueId big_in = g.add_input("big", {DType::kFloat32, {1, 64, 8}});
  const ValueId x = g.add_input("x", {DType::kFloat32, {1, 5, 8}});
  const ValueId big = *g.add_node(OpKind::kRelu, "big_relu", {big_in});
  g.add_output(*g.add_node(OpKind::kReduceSum, "big_sum", {big},
                           {{"axes", Ints{1}}, {"keepdims", int64_t{1}}}));
  g.add_output(*g.add_node(OpKind::kReduceMax, "big_max", {big},
                           {{"axes", Ints{1}}, {"keepdims", int64_t{1}}}));
  const ValueId a = *g.add_node(OpKind::kRelu, "small_relu", {x});
  const ValueId padded =
      *g.add_node(OpKind::kPad, "pad", {a}, {{"pads", Ints{0, 0, 0, 0, 3, 0}}, {"value", 0.0}});
  g.add_output(*g.add_node(OpKind::kReduceMean, "mean", {padded},
                           {{"axes", Ints{1}}, {"keepdims", int64_t{1}}}));

  driver::CompileOptions options;
  options.opt_level = 0;  // no fusion: every node its own step, as the plan below assumes
  auto net = driver::compile_network(g, options);
  ASSERT_TRUE(net) << net.error().message;
  const graph::MemoryPlan plan = graph::plan_memory(net->graph, 64, /*views=*/true);
  ASSERT_EQ(views_of(net->graph, plan, OpKind::kPad), 1);
  const graph::BufferView& view = plan.views.front();
  EXPECT_EQ(view.zeroed_from, 5 * 8 * 4);
  EXPECT_EQ(view.zeroed_to, 8 * 8 * 4);
  const graph::PlannedBuffer *small = nullptr, *large = nullptr;
  for (const auto& b : plan.buffers) {
    if (b.value == view.root) small = &b;
    if (net->graph.nodes()[static_cast<size_t>(net->graph.value(b.value).producer)].name ==
        "big_relu")
      large = &b;
  }
  ASSERT_TRUE(small && large);
  ASSERT_EQ(small->offset, large->offset) << "the test needs the arena to reuse the bytes";
  ASSERT_LT(large->last_step, small->first_step);

  Tensor big_values = random_input({1, 64, 8}, 3);
  for (float& v : big_values.f32) v = 2.0f + v;  // positive: relu keeps them
  const std::map<std::string, Tensor> inputs{{"big", big_values},
                                             {"x", random_input({1, 5, 8}, 4)}};
  auto want = graph::interpret(g, inputs);
  ASSERT_TRUE(want) << want.error().message;
  auto exe = load(*net, 1);
  ASSERT_TRUE(exe);
  auto got = exe->run(inputs);
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->size(), 3u);
  for (size_t i = 0; i < got->size(); ++i)
    EXPECT_LT(relative_error((*got)[i], (*want)[i]), 1e-6) << "output " << i;
}

// A pad of a prefix of a larger buffer (a padded dense's rows, sliced, re-padded for the next
// dense) zeroes that buffer's last rows: a view only where nothing else reads them.
TEST(BufferViews, APadOfAPrefixIsAViewOnlyWhereNoOtherReaderSeesTheRowsItZeroes) {
  for (const bool other_reader : {false, true}) {
    Graph g("prefix_pad");
    const ValueId x = g.add_input("x", {DType::kFloat32, {1, 8, 8}});
    const ValueId a = *g.add_node(OpKind::kRelu, "relu", {x});
    const ValueId kept = *g.add_node(
        OpKind::kSlice, "kept", {a},
        {{"starts", Ints{0}}, {"ends", Ints{5}}, {"axes", Ints{1}}, {"steps", Ints{1}}});
    const ValueId padded = *g.add_node(OpKind::kPad, "pad", {kept},
                                       {{"pads", Ints{0, 0, 0, 0, 3, 0}}, {"value", 0.0}});
    g.add_output(*g.add_node(OpKind::kReduceMean, "mean", {padded},
                             {{"axes", Ints{1}}, {"keepdims", int64_t{1}}}));
    if (other_reader)
      g.add_output(*g.add_node(OpKind::kReduceSum, "sum", {a},
                               {{"axes", Ints{1}}, {"keepdims", int64_t{1}}}));
    const graph::MemoryPlan plan = graph::plan_memory(g, 64, /*views=*/true);
    EXPECT_EQ(views_of(g, plan, OpKind::kSlice), 1);
    EXPECT_EQ(views_of(g, plan, OpKind::kPad), other_reader ? 0 : 1) << other_reader;

    driver::CompileOptions options;
    options.opt_level = 0;
    auto net = driver::compile_network(g, options);
    ASSERT_TRUE(net) << net.error().message;
    Tensor in = random_input({1, 8, 8}, 5);
    for (float& v : in.f32) v += 1.0f;  // the rows the pad zeroes are not zero before
    auto want = graph::interpret(g, {{"x", in}});
    ASSERT_TRUE(want) << want.error().message;
    auto exe = load(*net, 1);
    ASSERT_TRUE(exe);
    auto got = exe->run({{"x", in}});
    ASSERT_TRUE(got) << got.error().message;
    for (size_t i = 0; i < got->size(); ++i)
      EXPECT_LT(relative_error((*got)[i], (*want)[i]), 1e-6) << "output " << i;
  }
}

// Which slices and pads are views: only where the bytes of one are a prefix of the other's.
TEST(BufferViews, OnlyPrefixSlicesAndPadsThatAppendAreViews) {
  Graph g("kinds");
  const ValueId x = g.add_input("x", {DType::kFloat32, {2, 6, 8}});
  const ValueId y = g.add_input("y", {DType::kFloat32, {1, 6, 8}});
  // Each node is looked at before the next is added (which may move the node list).
  auto slice = [&](const std::string& name, ValueId in, Ints axes, Ints starts,
                   Ints ends) -> const graph::Node& {
    const Ints steps(axes.size(), 1);
    EXPECT_TRUE(g.add_node(OpKind::kSlice, name, {in},
                           {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}}));
    return g.nodes().back();
  };
  auto pad = [&](const std::string& name, ValueId in, Ints pads,
                 double value = 0.0) -> const graph::Node& {
    EXPECT_TRUE(g.add_node(OpKind::kPad, name, {in}, {{"pads", pads}, {"value", value}}));
    return g.nodes().back();
  };
  EXPECT_TRUE(graph::is_prefix_slice(g, slice("first_batch", x, {0}, {0}, {1})));
  EXPECT_TRUE(graph::is_prefix_slice(g, slice("first_rows_of_one", y, {1}, {0}, {4})));
  EXPECT_TRUE(graph::is_prefix_slice(g, slice("one_row_then_columns", y, {1, 2}, {0, 0}, {1, 3})));
  EXPECT_FALSE(graph::is_prefix_slice(g, slice("rows_of_each_batch", x, {1}, {0}, {4})));
  EXPECT_FALSE(graph::is_prefix_slice(g, slice("from_the_second_row", y, {1}, {1}, {6})));
  EXPECT_FALSE(graph::is_prefix_slice(g, slice("columns", y, {2}, {0}, {4})));

  EXPECT_TRUE(graph::is_appending_zero_pad(g, pad("batches_after", x, {0, 0, 0, 2, 0, 0})));
  EXPECT_TRUE(graph::is_appending_zero_pad(g, pad("rows_after", y, {0, 0, 0, 0, 3, 0})));
  EXPECT_FALSE(graph::is_appending_zero_pad(g, pad("rows_of_each_batch", x, {0, 0, 0, 0, 3, 0})));
  EXPECT_FALSE(graph::is_appending_zero_pad(g, pad("rows_before", y, {0, 2, 0, 0, 0, 0})));
  EXPECT_FALSE(graph::is_appending_zero_pad(g, pad("columns_after", y, {0, 0, 0, 0, 0, 2})));
  EXPECT_FALSE(graph::is_appending_zero_pad(g, pad("ones_after", y, {0, 0, 0, 0, 3, 0}, 1.0)));
}

}  // namespace
}  // namespace tensortune
