// Task extraction sees a network as compile does: the integer convolution of a QLinearConv (as
// the importer composes it: 8-bit data widened to int32 minus its zero point, constant widened
// weights) is an int8 template's task, and with integer kernels off it is no task at all.
#include "tuner/task_extraction.h"

#include <gtest/gtest.h>

#include "compiler/graph/op_attrs.h"

namespace tensortune {
namespace {

using graph::DType;
using graph::OpKind;
using graph::Tensor;

graph::Graph qlinear_conv_composition() {
  graph::Graph g("qlinear_conv");
  const graph::ValueId x = g.add_input("x", {DType::kUInt8, {1, 8, 10, 10}});
  auto widened = g.add_node(OpKind::kCast, "x.int32", {x},
                            graph::to_attrs(graph::CastAttrs{static_cast<int64_t>(DType::kInt32)}));
  EXPECT_TRUE(widened);
  auto shifted =
      g.add_node(OpKind::kSubtract, "x.shifted",
                 {*widened, g.add_constant("zp", Tensor::from_ints({}, {128}, DType::kInt32))});
  EXPECT_TRUE(shifted);
  std::vector<int64_t> w(16 * 8 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int64_t>(i % 255) - 127;
  auto conv = g.add_node(
      OpKind::kConv2dInteger, "conv",
      {*shifted, g.add_constant("w", Tensor::from_ints({16, 8, 3, 3}, w, DType::kInt32))},
      graph::Attrs{{"strides", std::vector<int64_t>{1, 1}},
                   {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                   {"dilations", std::vector<int64_t>{1, 1}},
                   {"groups", int64_t{1}}});
  EXPECT_TRUE(conv);
  g.add_output(*conv);
  return g;
}

schedule_space::Target cpu() { return {"llvm -keys=cpu -mcpu=x86-64", 8}; }

TEST(TaskExtraction, AQLinearConvIsAnInt8Task) {
  auto tasks = tuner::extract_tasks(qlinear_conv_composition(), cpu());
  ASSERT_TRUE(tasks) << tasks.error().message;
  ASSERT_EQ(tasks->tasks.size(), 1u);
  EXPECT_EQ(tasks->tasks[0].task.template_name, "conv2d_NCHWc_int8.x86");
  EXPECT_EQ(tasks->tasks[0].nodes, std::vector<std::string>{"conv"});

  auto without = tuner::extract_tasks(qlinear_conv_composition(), cpu(), {}, false);
  ASSERT_TRUE(without) << without.error().message;
  EXPECT_TRUE(without->tasks.empty());
}

}  // namespace
}  // namespace tensortune
