// Task extraction sees a network as compile does: the integer convolution of a QLinearConv (as
// the importer composes it: 8-bit data widened to int32 minus its zero point, constant widened
// weights) is an int8 template's task, and with integer kernels off it is no task at all.
#include "tuner/task_extraction.h"

#include <gtest/gtest.h>

#include "compiler/graph/op_attrs.h"
#include "schedule_space/gpu_limits.h"

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

// A transformer's projection as exporters write it (MatMul by a weight transposed at run time)
// is the dense task compile runs once FoldConstant and DenseFromMatMul made it one; attention's
// MatMul of two tensors is a batch_matmul task, one per shape, with every node that runs it.
TEST(TaskExtraction, ATransformersProjectionsAndAttentionMatMulsAreTasks) {
  graph::Graph g("attention");
  const graph::ValueId x = g.add_input("x", {DType::kFloat32, {2, 16, 32}});
  auto w = g.add_constant("w", Tensor::from_floats({64, 32}, std::vector<float>(64 * 32, 0.5f)));
  auto wt =
      g.add_node(OpKind::kTranspose, "w.t", {w}, graph::to_attrs(graph::TransposeAttrs{{1, 0}}));
  ASSERT_TRUE(wt);
  auto proj = g.add_node(OpKind::kMatMul, "proj", {x, *wt});  // [2, 16, 64]
  ASSERT_TRUE(proj);
  auto t = g.add_node(OpKind::kTranspose, "t", {*proj},
                      graph::to_attrs(graph::TransposeAttrs{{0, 2, 1}}));  // [2, 64, 16]
  ASSERT_TRUE(t);
  auto scores = g.add_node(OpKind::kMatMul, "scores", {*proj, *t});  // [2, 16, 16]
  ASSERT_TRUE(scores);
  auto again = g.add_node(OpKind::kMatMul, "again", {*scores, *scores});
  ASSERT_TRUE(again);
  g.add_output(*again);

  auto tasks = tuner::extract_tasks(g, cpu());
  ASSERT_TRUE(tasks) << tasks.error().message;
  ASSERT_EQ(tasks->tasks.size(), 3u);
  EXPECT_EQ(tasks->tasks[0].task.template_name, "dense_pack.x86");
  EXPECT_EQ(tasks->tasks[0].task.workload,
            schedule_space::Workload(schedule_space::DenseWorkload{32, 64, 32}));
  EXPECT_EQ(tasks->tasks[1].task.template_name, "batch_matmul.x86");
  EXPECT_EQ(tasks->tasks[1].task.workload,
            schedule_space::Workload(schedule_space::BatchMatmulWorkload{2, 16, 16, 64, false}));
  EXPECT_EQ(tasks->tasks[1].nodes, std::vector<std::string>{"scores"});
  EXPECT_EQ(tasks->tasks[2].task.workload,
            schedule_space::Workload(schedule_space::BatchMatmulWorkload{2, 16, 16, 16, false}));
  EXPECT_EQ(tasks->tasks[2].nodes, std::vector<std::string>{"again"});
  EXPECT_EQ(tasks->tasks[1].workload_key,
            "[\"batch_matmul.x86\", [[\"TENSOR\", [2, 16, 64], \"float32\"], [\"TENSOR\", [2, "
            "64, 16], \"float32\"], null, \"float32\", false, false]]");

  // At fp16 on a CUDA target the same layers are the tensor-core templates' float16 tasks (as
  // compile --precision fp16 runs them), and only those.
  const schedule_space::Target gpu{schedule_space::cuda_target_spec(80), 1};
  auto half = tuner::extract_tasks(g, gpu, {}, true, schedule_space::Precision::kFloat16);
  ASSERT_TRUE(half) << half.error().message;
  ASSERT_EQ(half->tasks.size(), 3u);
  EXPECT_EQ(half->tasks[0].task.template_name, "dense_tensorcore.cuda");
  EXPECT_EQ(half->tasks[0].task.workload, schedule_space::Workload(schedule_space::DenseWorkload{
                                              32, 64, 32, schedule_space::Precision::kFloat16}));
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(half->tasks[i].task.template_name, "batch_matmul_tensorcore.cuda");
    EXPECT_EQ(schedule_space::precision_of(half->tasks[i].task.workload),
              schedule_space::Precision::kFloat16);
  }
}

// At tf32 an ungrouped convolution is conv2d_nchw_tensorcore's tf32 task; a depthwise one has no
// tensor-core template and stays a float32 task of the CUDA templates.
TEST(TaskExtraction, ConvolutionsAtAReducedPrecisionTakeTheTensorCoresWhereATemplateServes) {
  graph::Graph g("convs");
  const graph::ValueId x = g.add_input("x", {DType::kFloat32, {1, 8, 10, 10}});
  auto conv = [&](const char* name, graph::ValueId in, int64_t out, int64_t groups) {
    const int64_t per_group = 8 / groups;
    auto n = g.add_node(
        OpKind::kConv2d, name,
        {in, g.add_constant(std::string(name) + ".w",
                            Tensor::from_floats({out, per_group, 3, 3},
                                                std::vector<float>(out * per_group * 9, 0.1f)))},
        graph::Attrs{{"strides", std::vector<int64_t>{1, 1}},
                     {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                     {"dilations", std::vector<int64_t>{1, 1}},
                     {"groups", groups}});
    EXPECT_TRUE(n);
    return *n;
  };
  g.add_output(conv("depthwise", conv("dense_conv", x, 8, 1), 8, 8));
  const schedule_space::Target gpu{schedule_space::cuda_target_spec(80), 1};
  auto tasks = tuner::extract_tasks(g, gpu, {}, true, schedule_space::Precision::kTf32);
  ASSERT_TRUE(tasks) << tasks.error().message;
  ASSERT_EQ(tasks->tasks.size(), 2u);
  EXPECT_EQ(tasks->tasks[0].task.template_name, "conv2d_nchw_tensorcore.cuda");
  EXPECT_EQ(schedule_space::precision_of(tasks->tasks[0].task.workload),
            schedule_space::Precision::kTf32);
  EXPECT_EQ(tasks->tasks[1].task.template_name, "depthwise_conv2d_nchw.cuda");
  EXPECT_EQ(schedule_space::precision_of(tasks->tasks[1].task.workload),
            schedule_space::Precision::kFloat32);
}

// Attention as exporters write it is a task of the target's fused template beside the two batch
// matmuls it replaces (compilation runs the faster), on the host and on a GPU; at a precision no
// fused template computes (fp16 on CUDA) only the matmuls' tensor-core tasks, as compile runs it.
TEST(TaskExtraction, AttentionIsAFusedTaskBesideItsBatchMatmuls) {
  graph::Graph g("attention");
  const graph::ValueId q = g.add_input("q", {DType::kFloat32, {2, 16, 8}});
  const graph::ValueId kt = g.add_input("kt", {DType::kFloat32, {2, 8, 16}});
  const graph::ValueId v = g.add_input("v", {DType::kFloat32, {2, 16, 8}});
  auto scores = g.add_node(OpKind::kMatMul, "qk", {q, kt});
  ASSERT_TRUE(scores);
  auto scaled = g.add_node(OpKind::kMultiply, "scale",
                           {*scores, g.add_constant("s", Tensor::from_floats({}, {0.25f}))});
  ASSERT_TRUE(scaled);
  auto p = g.add_node(OpKind::kSoftmax, "softmax", {*scaled}, {{"axis", int64_t{-1}}});
  ASSERT_TRUE(p);
  auto pv = g.add_node(OpKind::kMatMul, "pv", {*p, v});
  ASSERT_TRUE(pv);
  g.add_output(*pv);
  const schedule_space::Target gpu{schedule_space::cuda_target_spec(80), 1};
  for (const auto& [target, fused] :
       {std::pair{cpu(), "attention.x86"}, std::pair{gpu, "attention.cuda"}}) {
    auto tasks = tuner::extract_tasks(g, target);
    ASSERT_TRUE(tasks) << tasks.error().message;
    std::vector<std::string> names;
    for (const auto& t : tasks->tasks) names.push_back(t.task.template_name);
    ASSERT_EQ(names.size(), 3u);
    EXPECT_EQ(names[2], fused);
    EXPECT_EQ(tasks->tasks[2].nodes, std::vector<std::string>{"pv.attention"});
    EXPECT_EQ(
        tasks->tasks[2].task.workload,
        schedule_space::Workload(schedule_space::AttentionWorkload{2, 16, 16, 8, 8, 0, 0, 0.25}));
  }
  auto half = tuner::extract_tasks(g, gpu, {}, true, schedule_space::Precision::kFloat16);
  ASSERT_TRUE(half) << half.error().message;
  ASSERT_EQ(half->tasks.size(), 2u);
  for (const auto& t : half->tasks) EXPECT_EQ(t.task.template_name, "batch_matmul_tensorcore.cuda");
}

}  // namespace
}  // namespace tensortune
