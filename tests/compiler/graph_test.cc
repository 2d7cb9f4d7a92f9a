// The graph IR: shape inference against hand-computed shapes, and the interpreter's loops
// against the foundation's double-precision reference convolution.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <set>
#include <thread>

#include "compiler/graph/interpreter.h"
#include "compiler/graph/kernels.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/graph/printer.h"
#include "compiler/measure/reference_ops.h"
#include "support/thread_pool.h"

namespace tensortune::graph {
namespace {

Tensor random_tensor(Shape shape, uint64_t seed) {
  Tensor a = Tensor::zeros(std::move(shape));
  fill_uniform(a, seed);
  return a;
}

Attrs conv_attrs(std::vector<int64_t> strides, std::vector<int64_t> pads,
                 std::vector<int64_t> dilations, int64_t groups = 1) {
  return Attrs{{"strides", strides}, {"pads", pads}, {"dilations", dilations}, {"groups", groups}};
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
  return d;
}

TEST(ShapeInference, AsymmetricPaddingFollowsTheFormula) {
  // out = floor((in + begin + end - dilation*(k-1) - 1) / stride) + 1, per side pair.
  Graph g;
  ValueId x = g.add_input("x", {DType::kFloat32, {1, 2, 7, 6}});
  ValueId w = g.add_constant("w", Tensor::zeros(DType::kFloat32, {4, 2, 3, 3}));
  auto y = g.add_node(OpKind::kConv2d, "c", {x, w}, conv_attrs({2, 2}, {0, 1, 1, 0}, {1, 1}));
  ASSERT_TRUE(y) << y.error().message;
  // H: (7 + 0 + 1 - 3) / 2 + 1 = 3; W: (6 + 1 + 0 - 3) / 2 + 1 = 3.
  EXPECT_EQ(g.type(*y).shape, (Shape{1, 4, 3, 3}));
  auto d = g.add_node(OpKind::kConv2d, "d", {x, w}, conv_attrs({1, 1}, {2, 2, 2, 2}, {2, 2}));
  ASSERT_TRUE(d);
  EXPECT_EQ(g.type(*d).shape, (Shape{1, 4, 7, 6}));  // dilation 2, pad 2: same size
}

TEST(ShapeInference, ErrorsNameTheNodeAndTheShapes) {
  Graph g;
  ValueId x = g.add_input("x", {DType::kFloat32, {1, 3, 8, 8}});
  ValueId w = g.add_constant("w", Tensor::zeros(DType::kFloat32, {4, 5, 3, 3}));
  auto y = g.add_node(OpKind::kConv2d, "conv_7", {x, w}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}));
  ASSERT_FALSE(y);
  EXPECT_NE(y.error().message.find("conv_7"), std::string::npos) << y.error().message;
  EXPECT_NE(y.error().message.find("float32[4,5,3,3]"), std::string::npos) << y.error().message;
  auto p = g.add_node(OpKind::kMaxPool2d, "pool", {x},
                      Attrs{{"kernel", std::vector<int64_t>{9, 9}},
                            {"strides", std::vector<int64_t>{1, 1}},
                            {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                            {"dilations", std::vector<int64_t>{1, 1}}});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("does not fit"), std::string::npos) << p.error().message;
  auto add = g.add_node(OpKind::kAdd, "sum", {x, g.add_input("z", {DType::kFloat32, {5}})});
  ASSERT_FALSE(add);
  EXPECT_NE(add.error().message.find("do not broadcast"), std::string::npos);
}

TEST(Interpreter, Conv2dMatchesTheDoublePrecisionReference) {
  Graph g("conv");
  ValueId x = g.add_input("x", {DType::kFloat32, {2, 5, 11, 9}});
  const Tensor w = random_tensor({6, 5, 3, 2}, 2);
  auto y = g.add_node(OpKind::kConv2d, "c", {x, g.add_constant("w", w)},
                      conv_attrs({2, 1}, {1, 0, 2, 1}, {1, 2}));
  ASSERT_TRUE(y);
  g.add_output(*y);
  const Tensor input = random_tensor({2, 5, 11, 9}, 1);
  auto out = interpret(g, {{"x", input}});
  ASSERT_TRUE(out) << out.error().message;
  auto wl =
      schedule_space::conv2d_workload({2, 5, 11, 9}, {6, 5, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2});
  ASSERT_TRUE(wl);
  const Tensor ref = measure::conv2d_nchw_reference(input, w, nullptr, *wl);
  EXPECT_EQ((*out)[0].shape, ref.shape);
  EXPECT_LT(max_abs_diff((*out)[0].f32, ref.f32), 1e-4);
}

TEST(Interpreter, DepthwiseConvEqualsOneConvPerChannel) {
  Graph g;
  ValueId x = g.add_input("x", {DType::kFloat32, {1, 4, 9, 9}});
  const Tensor w = random_tensor({4, 1, 3, 3}, 3);
  auto y = g.add_node(OpKind::kConv2d, "dw", {x, g.add_constant("w", w)},
                      conv_attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 4));
  ASSERT_TRUE(y);
  g.add_output(*y);
  const Tensor input = random_tensor({1, 4, 9, 9}, 4);
  auto out = interpret(g, {{"x", input}});
  ASSERT_TRUE(out);
  auto wl =
      schedule_space::conv2d_workload({1, 1, 9, 9}, {1, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1});
  const int64_t plane = 81, oplane = 25;
  for (int64_t c = 0; c < 4; ++c) {
    Tensor xc = Tensor::zeros({1, 1, 9, 9});
    Tensor wc = Tensor::zeros({1, 1, 3, 3});
    std::copy_n(input.f32.begin() + c * plane, plane, xc.f32.begin());
    std::copy_n(w.f32.begin() + c * 9, 9, wc.f32.begin());
    const Tensor ref = measure::conv2d_nchw_reference(xc, wc, nullptr, *wl);
    std::vector<float> got((*out)[0].f32.begin() + c * oplane,
                           (*out)[0].f32.begin() + (c + 1) * oplane);
    EXPECT_LT(max_abs_diff(got, ref.f32), 1e-5) << "channel " << c;
  }
}

TEST(Interpreter, AveragePoolCountsPaddingOnlyWhenAsked) {
  // 1x1x2x2 input [[1, 2], [3, 4]], 2x2 window, stride 1, padding 1 on top/left only.
  for (int64_t include : {0, 1}) {
    Graph g;
    ValueId x = g.add_input("x", {DType::kFloat32, {1, 1, 2, 2}});
    auto y = g.add_node(OpKind::kAvgPool2d, "p", {x},
                        Attrs{{"kernel", std::vector<int64_t>{2, 2}},
                              {"strides", std::vector<int64_t>{1, 1}},
                              {"pads", std::vector<int64_t>{1, 1, 0, 0}},
                              {"dilations", std::vector<int64_t>{1, 1}},
                              {"count_include_pad", include}});
    ASSERT_TRUE(y);
    g.add_output(*y);
    auto out = interpret(g, {{"x", Tensor::from_floats({1, 1, 2, 2}, {1, 2, 3, 4})}});
    ASSERT_TRUE(out);
    const std::vector<float> want = include ? std::vector<float>{0.25f, 0.75f, 1.0f, 2.5f}
                                            : std::vector<float>{1.0f, 1.5f, 2.0f, 2.5f};
    EXPECT_EQ((*out)[0].f32, want) << "count_include_pad=" << include;
  }
}

TEST(Interpreter, LayoutTransformRoundTripsAndBlocksChannels) {
  Graph g;
  ValueId x = g.add_input("x", {DType::kFloat32, {1, 8, 2, 3}});
  auto b4 = g.add_node(OpKind::kLayoutTransform, "to4", {x},
                       Attrs{{"from_block", int64_t{0}}, {"to_block", int64_t{4}}});
  auto b2 = g.add_node(OpKind::kLayoutTransform, "to2", {*b4},
                       Attrs{{"from_block", int64_t{4}}, {"to_block", int64_t{2}}});
  auto back = g.add_node(OpKind::kLayoutTransform, "back", {*b2},
                         Attrs{{"from_block", int64_t{2}}, {"to_block", int64_t{0}}});
  ASSERT_TRUE(back);
  g.add_output(*b4);
  g.add_output(*back);
  const Tensor input = random_tensor({1, 8, 2, 3}, 5);
  auto out = interpret(g, {{"x", input}});
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)[0].shape, (Shape{1, 2, 2, 3, 4}));
  // NCHW4c element (n, c/4, h, w, c%4) is NCHW element (n, c, h, w): c = 5, h = 1, w = 2.
  EXPECT_EQ((*out)[0].f32[((1 * 2 + 1) * 3 + 2) * 4 + 1], input.f32[(5 * 2 + 1) * 3 + 2]);
  EXPECT_EQ((*out)[1].f32, input.f32);
}

TEST(Interpreter, RejectsMissingUnknownAndMistypedInputs) {
  Graph g;
  ValueId x = g.add_input("data", {DType::kFloat32, {1, 4}});
  g.add_output(*g.add_node(OpKind::kRelu, "r", {x}));
  auto missing = interpret(g, {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("'data' is not given"), std::string::npos);
  auto unknown = interpret(g, {{"date", Tensor::zeros(DType::kFloat32, {1, 4})}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'date' does not exist"), std::string::npos);
  auto mistyped = interpret(g, {{"data", Tensor::zeros(DType::kFloat32, {1, 5})}});
  ASSERT_FALSE(mistyped);
  EXPECT_NE(mistyped.error().message.find("float32[1,4]"), std::string::npos);
}

// The one op list: every operator has one name that maps back to it, and the categories the
// fusion and lowering code ask about are the ones ops.def gives.
TEST(OpList, NamesAreUniqueAndMapBack) {
  std::set<std::string> names;
  for (OpKind op : all_ops()) {
    EXPECT_TRUE(names.insert(op_name(op)).second) << op_name(op) << " twice";
    ASSERT_TRUE(op_from_name(op_name(op))) << op_name(op);
    EXPECT_EQ(*op_from_name(op_name(op)), op);
  }
  EXPECT_FALSE(op_from_name("conv3d"));
  EXPECT_TRUE(is_anchor(OpKind::kDense));
  EXPECT_TRUE(is_unary_elementwise(OpKind::kClip));
  EXPECT_TRUE(is_binary_elementwise(OpKind::kDivide));
  EXPECT_FALSE(is_unary_elementwise(OpKind::kSoftmax));
}

// Typed attributes: absent fields take the struct's default, present ones their value, and
// writing a struct and reading it back gives it again.
TEST(OpAttrs, DefaultsLiveInTheStructAndRoundTrip) {
  const auto clip = attrs_as<ClipAttrs>(Attrs{{"max", 6.0}});
  EXPECT_TRUE(std::isinf(clip.min) && clip.min < 0);
  EXPECT_EQ(clip.max, 6.0);
  const auto conv = attrs_as<Conv2dAttrs>(Attrs{{"groups", int64_t{4}}});
  EXPECT_EQ(conv.strides, (Ints{1, 1}));
  EXPECT_EQ(conv.pads, (Ints{0, 0, 0, 0}));
  EXPECT_EQ(conv.groups, 4);

  Pool2dAttrs pool;
  pool.kernel = {3, 3};
  pool.strides = {2, 2};
  pool.ceil_mode = 1;
  const auto back = attrs_as<Pool2dAttrs>(to_attrs(pool));
  EXPECT_EQ(back.kernel, pool.kernel);
  EXPECT_EQ(back.strides, pool.strides);
  EXPECT_EQ(back.ceil_mode, 1);
  EXPECT_EQ(back.dilations, (Ints{1, 1}));

  ShapeAttrs shape;
  EXPECT_FALSE(to_attrs(shape).has("end")) << "an unset optional is left out";
  shape.end = -1;
  EXPECT_EQ(attrs_as<ShapeAttrs>(to_attrs(shape)).end, std::optional<int64_t>(-1));
}

// A misspelt or mistyped attribute is an error naming it, not a silent default.
TEST(OpAttrs, UnknownAndMistypedAttributesAreRefused) {
  Graph g;
  auto x = g.add_input("x", {DType::kFloat32, {1, 4, 8, 8}});
  auto typo = g.add_node(OpKind::kClip, "clip0", {x}, Attrs{{"min", 0.0}, {"maxx", 6.0}});
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("unknown attribute 'maxx'"), std::string::npos)
      << typo.error().message;
  EXPECT_NE(typo.error().message.find("clip takes min, max"), std::string::npos)
      << typo.error().message;
  EXPECT_NE(typo.error().message.find("clip0"), std::string::npos) << typo.error().message;

  auto mistyped = g.add_node(OpKind::kFlatten, "flat", {x}, Attrs{{"axis", 1.5}});
  ASSERT_FALSE(mistyped);
  EXPECT_NE(mistyped.error().message.find("attribute 'axis' must be an integer, got a float"),
            std::string::npos)
      << mistyped.error().message;

  auto none = g.add_node(OpKind::kRelu, "relu", {x}, Attrs{{"alpha", 0.1}});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("relu takes none"), std::string::npos)
      << none.error().message;

  // An integer where a float is expected is a number all the same.
  EXPECT_TRUE(g.add_node(OpKind::kClip, "clip1", {x}, Attrs{{"min", int64_t{0}}}));
  EXPECT_TRUE(validate_attrs(OpKind::kConv2dNCHWc, to_attrs(Conv2dNCHWcAttrs{})));
}

TEST(Printer, ShowsTypesAttributesAndSummary) {
  Graph g("tiny");
  ValueId x = g.add_input("data", {DType::kFloat32, {1, 4}});
  g.add_output(*g.add_node(OpKind::kClip, "clip0", {x}, Attrs{{"min", 0.0}, {"max", 6.0}}));
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("input %data: float32[1,4]"), std::string::npos) << text;
  EXPECT_NE(text.find("%clip0 = clip(%data) max=6 min=0 -> float32[1,4]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("1 nodes: clip 1"), std::string::npos) << text;
}

}  // namespace
}  // namespace tensortune::graph

// The interpreter's loops run on the pool a caller scoped (an executor's, sized by --threads),
// and go back to the previous one when the scope ends.
TEST(Interpreter, LoopsKeepToTheScopedPool) {
  auto threads_used = [] {
    std::mutex mu;
    std::set<std::thread::id> ids;
    tensortune::graph::kernels::parallel_for(64, [&](int64_t) {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
    return ids;
  };
  tensortune::ThreadPool one(1), three(3);
  {
    const tensortune::graph::ScopedInterpreterPool scope(one);
    EXPECT_EQ(threads_used(), std::set<std::thread::id>{std::this_thread::get_id()});
    {
      const tensortune::graph::ScopedInterpreterPool inner(three);
      const auto ids = threads_used();
      EXPECT_EQ(ids.size(), 3u);  // 64 jobs dealt round-robin: every thread of the pool has some
      EXPECT_TRUE(ids.contains(std::this_thread::get_id()));
    }
    EXPECT_EQ(threads_used(), std::set<std::thread::id>{std::this_thread::get_id()});
  }
}
