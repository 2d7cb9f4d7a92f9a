// Networks compiled for CUDA, run in the CPU emulation of the very CUDA source a GPU would run,
// against the reference interpreter: every zoo model, records choosing non-default configs,
// ONNX's node tests, and the artifact's and loader's refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "compiler/driver/compile.h"
#include "compiler/frontend/model_zoo.h"
#include "compiler/graph/interpreter.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/runtime/artifact.h"
#include "compiler/runtime/executor.h"
#include "records/record_store.h"
#include "schedule_space/dense_cuda_template.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "tests/backend/network_test_util.h"
#include "tests/compiler/onnx_node_tests.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/cuda_driver.h"
#endif

namespace tensortune::driver {
using runtime::CompiledNetwork;
using runtime::deserialize_network;
using runtime::Executable;
using runtime::serialize_network;
using runtime::Step;

namespace {

namespace fs = std::filesystem;
namespace ss = schedule_space;
using graph::Tensor;

// 32x32 inputs: every operator and fusion pattern of the zoo, at a size the emulation (a
// context switch per thread per barrier) runs in seconds.
const graph::Shape kTiny = {1, 3, 32, 32};
constexpr double kTolerance = 1e-4;  // relative to the largest reference logit

using testing::random_input;
using testing::relative_error;

CompileOptions cuda_options(int opt_level = 3) {
  CompileOptions options;
  options.target = "cuda-sm80";
  options.opt_level = opt_level;
  return options;
}

bool has_gpu() {
#ifdef TT_WITH_CUDA
  return codegen::cuda::list_gpus().has_value();
#else
  return false;
#endif
}

/// Compiles, goes through the artifact's bytes, loads emulated.
std::unique_ptr<Executable> build(const graph::Graph& model, const CompileOptions& options,
                                  CompiledNetwork* compiled = nullptr) {
  auto net = compile_network(model, options);
  EXPECT_TRUE(net.has_value()) << net.error().message;
  if (!net) return nullptr;
  if (compiled) *compiled = *net;
  auto back = deserialize_network(serialize_network(*net), "test");
  EXPECT_TRUE(back.has_value()) << back.error().message;
  if (!back) return nullptr;
  auto exe = Executable::load(std::make_shared<CompiledNetwork>(std::move(*back)), 1, true);
  EXPECT_TRUE(exe.has_value()) << exe.error().message;
  return exe ? std::move(*exe) : nullptr;
}

/// Attention as exporters write it: MatMul(q, k^T) then a scale, softmax, MatMul(p, v) then a
/// residual add, a layer norm and the heads' transpose ([batch, heads, tokens, d] to [batch,
/// tokens, heads, d]), with its inputs; `tokens` tokens of 8 per head.
struct AttentionCase {
  graph::Graph graph{"attention"};
  std::map<std::string, Tensor> inputs;
};

AttentionCase attention_case(int64_t tokens) {
  using graph::OpKind;
  AttentionCase c;
  graph::Graph& g = c.graph;
  const graph::Shape qs{2, 3, tokens, 8}, kts{2, 3, 8, tokens};
  auto q = g.add_input("q", {graph::DType::kFloat32, qs});
  auto kt = g.add_input("kt", {graph::DType::kFloat32, kts});
  auto v = g.add_input("v", {graph::DType::kFloat32, qs});
  auto r = g.add_input("r", {graph::DType::kFloat32, qs});
  auto scale = g.add_constant("scale", Tensor::from_floats({}, {0.25f}));
  auto scores = *g.add_node(OpKind::kMatMul, "qk", {q, kt});
  auto scaled = *g.add_node(OpKind::kMultiply, "scale", {scores, scale});
  auto p = *g.add_node(OpKind::kSoftmax, "softmax", {scaled}, {{"axis", int64_t{-1}}});
  auto pv = *g.add_node(OpKind::kMatMul, "pv", {p, v});
  auto sum = *g.add_node(OpKind::kAdd, "residual", {pv, r});
  auto gamma = g.add_constant("gamma", random_input({8}, 5));
  auto beta = g.add_constant("beta", random_input({8}, 6));
  auto norm = *g.add_node(OpKind::kLayerNorm, "norm", {sum, gamma, beta},
                          {{"axis", int64_t{-1}}, {"epsilon", 1e-5}});
  g.add_output(
      *g.add_node(OpKind::kTranspose, "merge_heads", {norm}, {{"perm", graph::Ints{0, 2, 1, 3}}}));
  c.inputs = {{"q", random_input(qs, 1)},
              {"kt", random_input(kts, 2)},
              {"v", random_input(qs, 3)},
              {"r", random_input(qs, 4)}};
  return c;
}

// Attention on CUDA: both matmuls are batch_matmul.cuda kernels with the scale and the residual
// in their epilogues, softmax and layer norm row kernels, the transpose a strided copy: every
// step runs on the device; emulated, equal to the interpreter (16 tokens, and ViT's prime 197).
TEST(GpuNetwork, AttentionRunsOnTheDeviceWithBatchMatmulKernels) {
  for (int64_t tokens : {16, 197}) {
    SCOPED_TRACE(std::to_string(tokens) + " tokens");
    const AttentionCase c = attention_case(tokens);
    auto ref = graph::interpret(c.graph, c.inputs);
    ASSERT_TRUE(ref) << ref.error().message;
    CompiledNetwork net;
    CompileOptions options = cuda_options(3);
    options.fuse_attention = false;  // no records decide: the unfused path
    auto exe = build(c.graph, options, &net);
    ASSERT_TRUE(exe);
    int matmul_kernels = 0;
    for (const Step& s : net.steps) {
      EXPECT_EQ(s.kind, Step::Kind::kKernel) << s.label;
      matmul_kernels += s.label.starts_with("matmul");
    }
    EXPECT_EQ(net.steps.size(), 5u);  // qk+scale, softmax, pv+residual, layer_norm, transpose
    EXPECT_EQ(matmul_kernels, 2);
    int batch_matmuls = 0;
    for (const auto& sched : net.schedules)
      batch_matmuls += sched.workload.starts_with(ss::kBatchMatmulCuda);
    EXPECT_EQ(batch_matmuls, 2);
    auto got = exe->run(c.inputs);
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_LT(relative_error((*got)[0], (*ref)[0]), 1e-5);
  }
}

// Fused by default (no records say otherwise): the attention is one attention.cuda kernel with
// the residual add in its epilogue, then the layer norm and the transpose; emulated, equal to the
// interpreter at 16 tokens and at ViT's 197 (row tiles and key blocks with tails).
TEST(GpuNetwork, FusedAttentionRunsAsOneKernel) {
  for (int64_t tokens : {16, 197}) {
    SCOPED_TRACE(std::to_string(tokens) + " tokens");
    const AttentionCase c = attention_case(tokens);
    auto ref = graph::interpret(c.graph, c.inputs);
    ASSERT_TRUE(ref) << ref.error().message;
    CompiledNetwork net;
    auto exe = build(c.graph, cuda_options(3), &net);
    ASSERT_TRUE(exe);
    for (const Step& s : net.steps) EXPECT_EQ(s.kind, Step::Kind::kKernel) << s.label;
    EXPECT_EQ(net.steps.size(), 3u);  // attention+residual, layer_norm, transpose
    int fused = 0, batch_matmuls = 0;
    for (const auto& sched : net.schedules) {
      fused += sched.workload.starts_with(ss::kAttentionCuda);
      batch_matmuls += sched.workload.starts_with(ss::kBatchMatmulCuda);
    }
    EXPECT_EQ(fused, 1);
    EXPECT_EQ(batch_matmuls, 0);
    auto got = exe->run(c.inputs);
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_LT(relative_error((*got)[0], (*ref)[0]), 1e-5);
  }
}

// compile --precision: both matmuls of the attention run batch_matmul_tensorcore.cuda at the
// precision (the softmax and layer norm rows stay float32), emulated: as close to the float32
// interpreter as the accuracy goals ask of whole networks (cosine 0.9999 for tf32, 0.999
// for the 16-bit formats), and not equal to it (the inputs were rounded); 3xtf32 within float32's
// accuracy of it. A CPU target and a GPU without tensor cores refuse it, naming the target.
TEST(GpuNetwork, AttentionAtAReducedPrecisionRunsOnTheTensorCores) {
  const AttentionCase c = attention_case(16);
  auto ref = graph::interpret(c.graph, c.inputs);
  ASSERT_TRUE(ref) << ref.error().message;
  for (const auto& [precision, cosine] :
       {std::pair{ss::Precision::kTf32, 0.9999}, std::pair{ss::Precision::kFloat16, 0.999},
        std::pair{ss::Precision::kBFloat16, 0.999}, std::pair{ss::Precision::k3xTf32, 0.999999}}) {
    SCOPED_TRACE(ss::precision_name(precision));
    CompileOptions options = cuda_options(3);
    options.precision = precision;
    CompiledNetwork net;
    auto exe = build(c.graph, options, &net);
    ASSERT_TRUE(exe);
    int tensorcore = 0;
    for (const auto& sched : net.schedules)
      tensorcore += sched.workload.starts_with("batch_matmul_tensorcore.cuda") &&
                    sched.workload.find(ss::precision_name(precision)) != std::string::npos;
    EXPECT_EQ(tensorcore, 2);
    auto got = exe->run(c.inputs);
    ASSERT_TRUE(got) << got.error().message;
    const Tensor& y = (*got)[0];
    const Tensor& r = (*ref)[0];
    EXPECT_GE(testing::cosine_similarity(y, r), cosine);
    if (precision == ss::Precision::k3xTf32)
      EXPECT_LT(relative_error(y, r), 1e-5) << "3xtf32 is float32's accuracy";
    else
      EXPECT_GT(relative_error(y, r), 1e-6) << "no input was rounded";
  }
  CompileOptions cpu;
  cpu.precision = ss::Precision::kFloat16;
  auto refused = compile_network(c.graph, cpu);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("'llvm'"), std::string::npos) << refused.error().message;
  CompileOptions turing = cuda_options(3);
  turing.target = "cuda-sm75";
  turing.precision = ss::Precision::kTf32;
  auto old = compile_network(c.graph, turing);
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().message.find("sm75"), std::string::npos) << old.error().message;
}

// A weight beyond float16's range (65504) keeps its layer float32 at fp16 instead of turning into
// infinities; at tf32 (float32's range) the same layer takes the tensor cores.
TEST(GpuNetwork, AWeightBeyondFloat16sRangeKeepsItsLayerFloat32) {
  graph::Graph g("big_weight");
  auto x = g.add_input("x", {graph::DType::kFloat32, {4, 8}});
  std::vector<float> w(16 * 8, 0.5f);
  w[5] = 1e5f;
  auto dense = g.add_node(graph::OpKind::kDense, "fc",
                          {x, g.add_constant("w", Tensor::from_floats({16, 8}, w))});
  ASSERT_TRUE(dense) << dense.error().message;
  g.add_output(*dense);
  const std::map<std::string, Tensor> inputs{{"x", random_input({4, 8}, 9)}};
  auto ref = graph::interpret(g, inputs);
  ASSERT_TRUE(ref) << ref.error().message;
  for (const auto precision : {ss::Precision::kFloat16, ss::Precision::kTf32}) {
    SCOPED_TRACE(ss::precision_name(precision));
    CompileOptions options = cuda_options(3);
    options.precision = precision;
    CompiledNetwork net;
    auto exe = build(g, options, &net);
    ASSERT_TRUE(exe);
    bool tensorcore = false;
    for (const auto& sched : net.schedules)
      tensorcore = tensorcore || sched.workload.starts_with("dense_tensorcore.cuda");
    EXPECT_EQ(tensorcore, precision == ss::Precision::kTf32);
    auto got = exe->run(inputs);
    ASSERT_TRUE(got) << got.error().message;
    for (float v : (*got)[0].f32) EXPECT_TRUE(std::isfinite(v));
    EXPECT_LT(relative_error((*got)[0], (*ref)[0]), 1e-2);
  }
}

struct ZooCase {
  std::string model;
  int opt_level;
  bool blocked = false;  ///< --gpu-layout nchwc: conv2d_NCHWc.cuda and layout transforms
};

class ZooOnGpu : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ZooOnGpu, EmulatedMatchesTheInterpreter) {
  const auto [name, opt, blocked] = GetParam();
  auto model = frontend::zoo_model(name, kTiny);
  ASSERT_TRUE(model) << model.error().message;
  const Tensor x = random_input(kTiny, 11);
  auto ref = graph::interpret(*model, {{"data", x}});
  ASSERT_TRUE(ref) << ref.error().message;
  CompiledNetwork net;
  CompileOptions options = cuda_options(opt);
  options.gpu_blocked_layout = blocked;
  auto exe = build(*model, options, &net);
  ASSERT_TRUE(exe);
  EXPECT_EQ(net.target, runtime::TargetKind::kCuda);
  EXPECT_EQ(net.compute_capability, 80);
  // Every conv2d, dense, pooling and element-wise group of the zoo is a CUDA kernel, never the
  // interpreter; only reshapes stay native (copies).
  for (const Step& s : net.steps) {
    EXPECT_NE(s.kind, Step::Kind::kInterpret) << s.label;
    if (s.kind == Step::Kind::kNative) {
      EXPECT_TRUE(s.label == "flatten" || s.label == "reshape") << s.label << " is not a kernel";
    }
  }
  for (const auto& k : net.gpu_kernels)
    EXPECT_TRUE(ss::check_gpu_limits(k.usage(), ss::kUniversalGpuLimits).has_value()) << k.entry;
  auto out = exe->run({{"data", x}});
  ASSERT_TRUE(out) << out.error().message;
  const double e = relative_error((*out)[0], (*ref)[0]);
  EXPECT_LT(e, kTolerance) << name << " at opt level " << opt;
  if (blocked) {  // every conv in the blocked layout, with transforms where blocks differ
    int blocked_convs = 0;
    for (const auto& s : net.schedules)
      blocked_convs += s.workload.starts_with("conv2d_NCHWc.cuda");
    EXPECT_GT(blocked_convs, 0);
  }
  std::printf("%-13s opt %d on cuda-sm80%s (emulated): %zu kernels, relative error %.2g\n",
              name.c_str(), opt, blocked ? " in blocked layouts" : "", net.gpu_kernels.size(), e);
}

// Every model fused (opt level 3); unfused (opt level 0: every node a kernel of its own, batch
// norm as element-wise kernels) for the two smallest, which hold every operator kind.
std::vector<ZooCase> zoo_cases() {
  std::vector<ZooCase> cases;
  for (const auto& m : frontend::zoo_model_names()) cases.push_back({m, 3});
  cases.push_back({"resnet-18", 0});
  cases.push_back({"mobilenet-v1", 0});
  cases.push_back({"resnet-18", 3, true});
  cases.push_back({"mobilenet-v1", 3, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllModels, ZooOnGpu, ::testing::ValuesIn(zoo_cases()),
                         [](const auto& info) {
                           std::string n = info.param.model + "_opt" +
                                           std::to_string(info.param.opt_level) +
                                           (info.param.blocked ? "_nchwc" : "");
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / ("tt_gpu_net_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

/// A valid config of the task other than its default one: the default with one knob changed,
/// the last knobs first (unrolling, then reduction splits), so that the emulation runs the same
/// number of threads as with the default and stays quick.
ss::Config non_default_config(const ss::Task& task, const ss::ConfigSpace& space) {
  const ss::Config base = ss::default_config(task, space);
  for (size_t k = space.knobs().size(); k-- > 0;)
    for (int32_t o = 0; o < static_cast<int32_t>(space.knobs()[k].options.size()); ++o) {
      if (o == base.digits[k]) continue;
      std::vector<int32_t> digits = base.digits;
      digits[k] = o;
      auto c = space.config_from_digits(digits);
      if (c && space.is_valid(*c)) return *c;
    }
  return base;
}

// A record DB of cuda-sm80 records (as a GPU tuning run leaves them) chooses every conv2d and
// dense config; the network still computes the right answer with them.
TEST(GpuRecords, ChooseNonDefaultConfigsAndTheAnswerStays) {
  auto model = frontend::zoo_model("resnet-18", kTiny);
  ASSERT_TRUE(model);
  const ss::Target target{ss::cuda_target_spec(80), 1};
  const std::string db = temp("records.db");
  fs::remove(db);
  std::map<std::string, std::string> chosen;  // described workload -> config
  {
    auto store = std::move(records::RecordStore::open(db)).value();
    for (const graph::Node& n : model->nodes()) {
      ss::Workload workload;
      std::string name;
      const graph::Shape& x = model->type(n.inputs.at(0)).shape;
      if (n.op == graph::OpKind::kConv2d) {
        const auto a = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
        auto w =
            ss::conv2d_workload(x, model->type(n.inputs[1]).shape, a.strides, a.pads, a.dilations);
        ASSERT_TRUE(w) << w.error().message;
        workload = *w;
        name = ss::kConv2dNchwCuda;
      } else if (n.op == graph::OpKind::kDense) {
        workload = ss::DenseWorkload{x[0], model->type(n.inputs[1]).shape[0], x[1]};
        name = x[0] < 32 ? ss::kDenseSmallBatchGpu : ss::kDenseLargeBatchGpu;
      } else {
        continue;
      }
      const ss::Task task = *ss::make_task(name, workload, target);
      const ss::ConfigSpace space = *ss::make_config_space(task);
      const ss::Config c = non_default_config(task, space);
      ASSERT_NE(c.index, ss::default_config(task, space).index) << name;
      chosen[name + " " + ss::describe_workload(workload)] = space.describe(c);
      ss::MeasureResult r;
      r.config_index = c.index;
      r.costs = {1e-4};
      r.device_key = "cuda-sm80";
      const int64_t id = *store->ensure_task(records::task_info(task, space));
      ASSERT_TRUE(store->add_results(id, space, {c}, {r}, {"test", "t"}, {0}));
    }
  }
  ASSERT_GE(chosen.size(), 5u);
  CompileOptions options = cuda_options();
  options.records = db;
  CompiledNetwork net;
  auto exe = build(*model, options, &net);
  ASSERT_TRUE(exe);
  ASSERT_EQ(net.schedules.size(), chosen.size());
  for (const auto& s : net.schedules) {
    EXPECT_TRUE(s.tuned) << s.workload;
    EXPECT_EQ(s.schedule, chosen[s.workload]) << s.workload;
  }
  const Tensor x = random_input(kTiny, 3);
  auto ref = graph::interpret(*model, {{"data", x}});
  auto out = exe->run({{"data", x}});
  ASSERT_TRUE(ref && out) << (out ? "" : out.error().message);
  EXPECT_LT(relative_error((*out)[0], (*ref)[0]), kTolerance);

  // Records of another compute capability are not this target's: defaults, each said.
  CompileOptions other = cuda_options();
  other.target = "cuda-sm90";
  other.records = db;
  auto net90 = compile_network(*model, other);
  ASSERT_TRUE(net90) << net90.error().message;
  for (const auto& s : net90->schedules) EXPECT_FALSE(s.tuned) << s.workload;
  fs::remove(db);
}

// A 3x3 stride-1 convolution takes conv2d_nchw_winograd.cuda where its record measured faster
// than the direct one's (its weight transformed at compile time), and the network still equals
// the interpreter; --no-winograd keeps the direct records.
TEST(GpuRecords, WinogradRunsWhereItsRecordMeasuredFaster) {
  auto model = frontend::zoo_model("resnet-18", kTiny);
  ASSERT_TRUE(model);
  const ss::Target target{ss::cuda_target_spec(80), 1};
  const std::string db = temp("winograd.db");
  fs::remove(db);
  int winograd_workloads = 0;
  {
    auto store = std::move(records::RecordStore::open(db)).value();
    std::set<std::string> seen;
    for (const graph::Node& n : model->nodes()) {
      if (n.op != graph::OpKind::kConv2d) continue;
      const auto a = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
      auto w = ss::conv2d_workload(model->type(n.inputs[0]).shape, model->type(n.inputs[1]).shape,
                                   a.strides, a.pads, a.dilations);
      ASSERT_TRUE(w) << w.error().message;
      if (!seen.insert(ss::describe_workload(*w)).second) continue;
      // The direct record at 100 us; where Winograd serves, a non-default config of it at 50 us.
      for (const char* name : {"conv2d_nchw.cuda", "conv2d_nchw_winograd.cuda"}) {
        auto task = ss::make_task(name, *w, target);
        if (!task) continue;
        const ss::ConfigSpace space = *ss::make_config_space(*task);
        const ss::Config c = non_default_config(*task, space);
        ss::MeasureResult r;
        r.config_index = c.index;
        r.costs = {std::string(name) == "conv2d_nchw.cuda" ? 1e-4 : 5e-5};
        r.device_key = "cuda-sm80";
        const int64_t id = *store->ensure_task(records::task_info(*task, space));
        ASSERT_TRUE(store->add_results(id, space, {c}, {r}, {"test", "t"}, {0}));
        winograd_workloads += std::string(name) != "conv2d_nchw.cuda";
      }
    }
  }
  ASSERT_GE(winograd_workloads, 3);
  CompileOptions options = cuda_options();
  options.records = db;
  CompiledNetwork net;
  auto exe = build(*model, options, &net);
  ASSERT_TRUE(exe);
  int winograd = 0;
  for (const auto& s : net.schedules) {
    winograd += s.workload.starts_with("conv2d_nchw_winograd.cuda");
    if (s.workload.starts_with("conv2d")) EXPECT_TRUE(s.tuned) << s.workload;
  }
  EXPECT_EQ(winograd, winograd_workloads);
  const Tensor x = random_input(kTiny, 5);
  auto ref = graph::interpret(*model, {{"data", x}});
  auto out = exe->run({{"data", x}});
  ASSERT_TRUE(ref && out) << (out ? "" : out.error().message);
  EXPECT_LT(relative_error((*out)[0], (*ref)[0]), kTolerance);

  CompileOptions direct = options;
  direct.algorithms.excluded = {"winograd"};
  auto net_direct = compile_network(*model, direct);
  ASSERT_TRUE(net_direct) << net_direct.error().message;
  for (const auto& s : net_direct->schedules)
    EXPECT_FALSE(s.workload.starts_with("conv2d_nchw_winograd.cuda")) << s.workload;
  fs::remove(db);
}

TEST(GpuArtifact, KeepsItsKernelsAndIsRefusedWhereItCannotRun) {
  auto model = frontend::zoo_model("mobilenet-v1", kTiny);
  ASSERT_TRUE(model);
  auto net = compile_network(*model, cuda_options());
  ASSERT_TRUE(net) << net.error().message;
  ASSERT_FALSE(net->gpu_kernels.empty());
  EXPECT_FALSE(net->gpu_source.empty());
  EXPECT_TRUE(net->object_code.empty());
  // A kernel with dynamic shared memory keeps it (the loader opts the function into it).
  net->gpu_kernels.front().dynamic_shared_bytes = 96 * 1024;
  auto back = deserialize_network(serialize_network(*net), "net.tt");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->target, runtime::TargetKind::kCuda);
  EXPECT_EQ(back->compute_capability, 80);
  EXPECT_EQ(back->gpu_source, net->gpu_source);
  EXPECT_EQ(back->gpu_ptx, net->gpu_ptx);
  ASSERT_EQ(back->gpu_kernels.size(), net->gpu_kernels.size());
  for (size_t i = 0; i < net->gpu_kernels.size(); ++i) {
    EXPECT_EQ(back->gpu_kernels[i].entry, net->gpu_kernels[i].entry);
    EXPECT_EQ(back->gpu_kernels[i].grid, net->gpu_kernels[i].grid);
    EXPECT_EQ(back->gpu_kernels[i].block, net->gpu_kernels[i].block);
    EXPECT_EQ(back->gpu_kernels[i].arg_count, net->gpu_kernels[i].arg_count);
    EXPECT_EQ(back->gpu_kernels[i].shared_bytes, net->gpu_kernels[i].shared_bytes);
    EXPECT_EQ(back->gpu_kernels[i].dynamic_shared_bytes, net->gpu_kernels[i].dynamic_shared_bytes);
    EXPECT_EQ(back->gpu_kernels[i].source, net->gpu_kernels[i].source);
  }
  back->gpu_kernels.front().dynamic_shared_bytes = 0;  // the kernel itself needs none

  // Without --emulate a GPU network runs on a GPU; where there is none, it says so and how it
  // can run.
  auto shared = std::make_shared<CompiledNetwork>(*back);
  auto plain = Executable::load(shared, 1);
  if (!has_gpu()) {
    ASSERT_FALSE(plain);
    EXPECT_EQ(plain.error().code, ErrorCode::kFailedPrecondition);
    EXPECT_NE(plain.error().message.find("cuda -arch=sm_80"), std::string::npos)
        << plain.error().message;
    EXPECT_NE(plain.error().message.find("--emulate"), std::string::npos) << plain.error().message;
  } else {
    EXPECT_TRUE(plain) << plain.error().message;
  }
  // A CPU network is not emulated.
  auto cpu = compile_network(*model, CompileOptions{});
  ASSERT_TRUE(cpu);
  auto emulated_cpu = Executable::load(std::make_shared<CompiledNetwork>(*cpu), 1, true);
  ASSERT_FALSE(emulated_cpu);
  EXPECT_EQ(emulated_cpu.error().code, ErrorCode::kInvalidArgument);

  // A step that launches no kernel of the module, or with the wrong arguments, is refused at
  // load, never launched.
  CompiledNetwork renamed = *back;
  for (Step& s : renamed.steps)
    if (s.kind == Step::Kind::kKernel) {
      s.symbol = "tt_missing";
      break;
    }
  auto missing = Executable::load(std::make_shared<CompiledNetwork>(renamed), 1, true);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kDataLoss);
  EXPECT_NE(missing.error().message.find("tt_missing"), std::string::npos);
  CompiledNetwork short_args = *back;
  for (Step& s : short_args.steps)
    if (s.kind == Step::Kind::kKernel) {
      s.args.pop_back();
      break;
    }
  auto wrong = Executable::load(std::make_shared<CompiledNetwork>(short_args), 1, true);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, ErrorCode::kDataLoss);

  // A kernel with an empty launch dimension does not deserialize.
  CompiledNetwork empty_grid = *net;
  empty_grid.gpu_kernels[0].grid.x = 0;
  auto bad = deserialize_network(serialize_network(empty_grid), "bad.tt");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kDataLoss);
  EXPECT_NE(bad.error().message.find("launch dimension 0"), std::string::npos)
      << bad.error().message;
}

// Where a GPU exists: every zoo model compiled for it runs on it and matches the interpreter
// (at 224x224 too for ResNet-18), and profiling times every step.
// The same attention on a real GPU (gpu-check step b runs GpuDevice.*): batch_matmul.cuda, the
// row kernels and the strided copy as the hardware runs them, at BERT's 128 tokens and at 197
// (ViT's: tiles that do not divide), against the interpreter.
TEST(GpuDevice, AttentionRunsOnTheGpuAndMatchesTheInterpreter) {
#ifdef TT_WITH_CUDA
  auto gpus = codegen::cuda::list_gpus();
  if (!gpus) GTEST_SKIP() << "no GPU: " << gpus.error().message;
  const int cc = gpus->front().compute_capability;
  for (int64_t tokens : {128, 197}) {
    SCOPED_TRACE(std::to_string(tokens) + " tokens");
    const AttentionCase c = attention_case(tokens);
    auto ref = graph::interpret(c.graph, c.inputs);
    ASSERT_TRUE(ref) << ref.error().message;
    CompileOptions options = cuda_options();
    options.target = "cuda-sm" + std::to_string(cc);
    auto net = compile_network(c.graph, options);
    ASSERT_TRUE(net) << net.error().message;
    auto exe = Executable::load(std::make_shared<CompiledNetwork>(std::move(*net)), 1);
    ASSERT_TRUE(exe) << exe.error().message;
    auto got = (*exe)->run(c.inputs);
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_LT(relative_error((*got)[0], (*ref)[0]), 1e-5);
  }
#else
  GTEST_SKIP() << "built without the CUDA Toolkit";
#endif
}

// The tensor cores on a real GPU: the attention at each reduced precision (its matmuls
// batch_matmul_tensorcore.cuda) against the float32 interpreter, as closely as the emulation
// gets (cosine 0.9999 tf32, 0.999 the 16-bit formats).
TEST(GpuDevice, AttentionAtAReducedPrecisionRunsOnTheGpuTensorCores) {
#ifdef TT_WITH_CUDA
  auto gpus = codegen::cuda::list_gpus();
  if (!gpus) GTEST_SKIP() << "no GPU: " << gpus.error().message;
  const int cc = gpus->front().compute_capability;
  if (cc < 80) GTEST_SKIP() << "sm_" << cc << " has no tf32/bf16 tensor cores";
  const AttentionCase c = attention_case(128);
  auto ref = graph::interpret(c.graph, c.inputs);
  ASSERT_TRUE(ref) << ref.error().message;
  for (const auto& [precision, cosine] :
       {std::pair{ss::Precision::kTf32, 0.9999}, std::pair{ss::Precision::kFloat16, 0.999},
        std::pair{ss::Precision::kBFloat16, 0.999}, std::pair{ss::Precision::k3xTf32, 0.999999}}) {
    SCOPED_TRACE(ss::precision_name(precision));
    CompileOptions options = cuda_options();
    options.target = "cuda-sm" + std::to_string(cc);
    options.precision = precision;
    auto net = compile_network(c.graph, options);
    ASSERT_TRUE(net) << net.error().message;
    auto exe = Executable::load(std::make_shared<CompiledNetwork>(std::move(*net)), 1);
    ASSERT_TRUE(exe) << exe.error().message;
    auto got = (*exe)->run(c.inputs);
    ASSERT_TRUE(got) << got.error().message;
    const Tensor& y = (*got)[0];
    const Tensor& r = (*ref)[0];
    EXPECT_GE(testing::cosine_similarity(y, r), cosine);
  }
#else
  GTEST_SKIP() << "built without the CUDA Toolkit";
#endif
}

TEST(GpuDevice, ZooModelsRunOnTheGpuAndMatchTheInterpreter) {
#ifdef TT_WITH_CUDA
  auto gpus = codegen::cuda::list_gpus();
  if (!gpus) GTEST_SKIP() << "no GPU: " << gpus.error().message;
  const int cc = gpus->front().compute_capability;
  struct Case {
    std::string name;
    graph::Shape shape;
    bool winograd = false;  ///< every 3x3 stride-1 conv through conv2d_nchw_winograd.cuda
  };
  std::vector<Case> cases;
  for (const auto& m : frontend::zoo_model_names()) cases.push_back({m, kTiny});
  cases.push_back({"resnet-18", {1, 3, 224, 224}});
  cases.push_back({"resnet-18", {1, 3, 224, 224}, true});
  for (const auto& [name, shape, winograd] : cases) {
    SCOPED_TRACE(name + (winograd ? " with Winograd" : ""));
    auto model = frontend::zoo_model(name, shape);
    ASSERT_TRUE(model) << model.error().message;
    CompileOptions options = cuda_options();
    options.target = "cuda-sm" + std::to_string(cc);
    const ss::Target target{ss::cuda_target_spec(cc), 1};
    if (winograd)
      options.choose_kernel = [target](const ss::Workload& w) -> std::optional<ss::TemplateConfig> {
        auto task = ss::make_task("conv2d_nchw_winograd.cuda", w, target);
        if (!task) return std::nullopt;
        ss::ConfigSpace space = *ss::make_config_space(*task);
        ss::Config config = ss::default_config(*task, space);
        return ss::TemplateConfig{std::move(*task), std::move(space), std::move(config)};
      };
    auto net = compile_network(*model, options);
    ASSERT_TRUE(net) << net.error().message;
    auto exe = Executable::load(std::make_shared<CompiledNetwork>(std::move(*net)), 1);
    ASSERT_TRUE(exe) << exe.error().message;
    const Tensor x = random_input(shape, 13);
    auto ref = graph::interpret(*model, {{"data", x}});
    ASSERT_TRUE(ref) << ref.error().message;
    auto out = (*exe)->run({{"data", x}});
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_LT(relative_error((*out)[0], (*ref)[0]), kTolerance) << name;
    std::vector<double> step_seconds;
    ASSERT_TRUE((*exe)->run(&step_seconds));
    EXPECT_EQ(step_seconds.size(), (*exe)->network().steps.size());
  }
#else
  GTEST_SKIP() << "built without the CUDA Toolkit";
#endif
}

TEST(GpuTargets, UnknownTargetsAreRefusedNamingThem) {
  auto model = frontend::zoo_model("resnet-18", kTiny);
  ASSERT_TRUE(model);
  for (const std::string t : {"rocm", "cuda-sm", "cuda -arch=sm_x"}) {
    CompileOptions options;
    options.target = t;
    auto net = compile_network(*model, options);
    ASSERT_FALSE(net) << t;
    EXPECT_EQ(net.error().code, ErrorCode::kInvalidArgument) << t;
    EXPECT_NE(net.error().message.find(t), std::string::npos) << net.error().message;
  }
  EXPECT_EQ(*cuda_target_capability("cuda"), 80);
  EXPECT_EQ(*cuda_target_capability("cuda-sm90"), 90);
  EXPECT_EQ(*cuda_target_capability("cuda -arch=sm_86"), 86);
  EXPECT_FALSE(cuda_target_capability("llvm")->has_value());
}

// ONNX's node tests compiled for CUDA and emulated: those whose network has a CUDA kernel
// (conv, gemm, pooling, element-wise broadcasting of every shape the tests hold) pass as the
// interpreter does.
TEST(GpuOnnxNodeTests, PassEmulated) {
  const auto folders = testing::node_test_folders_in_scope();
  if (folders.empty())
    GTEST_SKIP() << "ONNX node tests not installed (Debian package libonnx-testdata)";
  const testing::GraphRunner interpreter = [](const graph::Graph& g,
                                              const std::map<std::string, Tensor>& in) {
    return graph::interpret(g, in);
  };
  int with_kernels = 0, passed = 0, failed = 0;
  std::ostringstream failures;
  for (const auto& folder : folders) {
    if (testing::run_node_test(folder, interpreter).status != testing::NodeTestStatus::kPassed)
      continue;
    bool has_kernel = false;
    const testing::GraphRunner emulated =
        [&](const graph::Graph& g,
            const std::map<std::string, Tensor>& in) -> Expected<std::vector<Tensor>> {
      has_kernel = true;  // a network that does not compile for CUDA counts as a failure
      TT_ASSIGN_OR_RETURN(CompiledNetwork net, compile_network(g, cuda_options()));
      has_kernel = !net.gpu_kernels.empty();
      if (!has_kernel) return graph::interpret(g, in);  // nothing of ours to check
      TT_ASSIGN_OR_RETURN(CompiledNetwork back,
                          deserialize_network(serialize_network(net), "node.tt"));
      TT_ASSIGN_OR_RETURN(
          auto exe, Executable::load(std::make_shared<CompiledNetwork>(std::move(back)), 1, true));
      return exe->run(in);
    };
    const auto got = testing::run_node_test(folder, emulated);
    if (!has_kernel) continue;
    ++with_kernels;
    if (got.status == testing::NodeTestStatus::kPassed) {
      ++passed;
    } else {
      ++failed;
      failures << "  " << got.name << ": " << got.detail << "\n";
    }
  }
  std::cout << "ONNX node tests with CUDA kernels, emulated: " << passed << " of " << with_kernels
            << " pass\n"
            << failures.str();
  EXPECT_GT(with_kernels, 20);
  EXPECT_EQ(failed, 0) << failures.str();
}

}  // namespace
}  // namespace tensortune::driver
