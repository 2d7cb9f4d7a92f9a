// The GPU templates' CUDA kernels: numerics in the CPU emulation against the naive reference,
// and (with the CUDA Toolkit) NVRTC + ptxas for sm_80 and sm_90 within the limits.
#include "compiler/codegen/cuda/cuda_kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>

#include "compiler/codegen/cuda/emulator.h"
#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "schedule_space/attention_cuda_template.h"
#include "schedule_space/attention_template.h"
#include "schedule_space/conv2d_winograd_cuda_template.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/tensorcore_gemm_template.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/cuda_driver.h"
#include "compiler/codegen/cuda/nvrtc.h"
#endif

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
namespace cuda = tensortune::codegen::cuda;
using tt::Tensor;

namespace {

ss::Task make(const std::string& name, const ss::Workload& w) {
  auto task = ss::make_task(name, w, ss::Target{ss::cuda_target_spec(80), 1});
  EXPECT_TRUE(task.has_value()) << task.error().message;
  return *task;
}

// Up to `count` valid configs spread over the space, the default first.
std::vector<ss::Config> sample(const ss::Task& task, const ss::ConfigSpace& space, int count) {
  std::vector<ss::Config> out{ss::default_config(task, space)};
  const int64_t step = std::max<int64_t>(1, space.size() / count - 1);
  for (int64_t i = 1; i < space.size() && static_cast<int>(out.size()) < count; i += step)
    if (space.is_valid_index(i)) out.push_back(*space.config_at(i));
  return out;
}

void expect_matches_reference(const ss::Task& task, int count, bool relu) {
  auto space = ss::make_config_space(task);
  ASSERT_TRUE(space.has_value());
  const ss::OperandShapes shapes = ss::operand_shapes(task.workload);
  tt::measure::OperatorInputs in{Tensor::zeros(shapes.data), Tensor::zeros(shapes.weight),
                                 Tensor::zeros(shapes.bias)};
  tt::fill_uniform(in.data, 21);
  tt::fill_uniform(in.weight, 22);
  tt::fill_uniform(*in.bias, 23);
  Tensor want = tt::measure::reference_output(task.workload, in.data, in.weight, &*in.bias);
  if (relu)
    for (float& v : want.f32) v = std::max(v, 0.0f);
  const auto configs = sample(task, *space, count);
  EXPECT_GE(configs.size(), 3u);
  for (const ss::Config& c : configs) {
    tt::codegen::KernelOptions options;
    options.relu = relu;
    auto got = tt::measure::run_operator(task, *space, c, in, 1, options);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    ASSERT_EQ(got->shape, want.shape);
    for (size_t j = 0; j < want.f32.size(); ++j)
      ASSERT_NEAR(got->f32[j], want.f32[j], 1e-4 * (1 + std::fabs(want.f32[j])))
          << space->describe(c) << " element " << j;
  }
}

TEST(CudaEmulation, Conv2dNchwWithStrideDilationAndUnevenPaddingMatchesTheReference) {
  // 2 images, 6 -> 8 channels, a 3x2 kernel, stride (2, 1), dilation (1, 2), pads t1 l0 b2 r1.
  auto w = ss::conv2d_workload({2, 6, 9, 11}, {8, 6, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2});
  ASSERT_TRUE(w.has_value()) << w.error().message;
  expect_matches_reference(make("conv2d_nchw.cuda", *w), 8, /*relu=*/true);
}

TEST(CudaEmulation, Conv2dNchwcInBlockedLayoutsMatchesTheReference) {
  // Channel counts with several block sizes (6 = 1, 2, 3, 6; 12 = ...), stride and dilation.
  auto w = ss::conv2d_workload({2, 6, 9, 10}, {12, 6, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2});
  ASSERT_TRUE(w.has_value()) << w.error().message;
  expect_matches_reference(make("conv2d_NCHWc.cuda", *w), 8, /*relu=*/true);
}

TEST(CudaEmulation, DepthwiseConv2dNchwWithStrideDilationAndUnevenPaddingMatchesTheReference) {
  // 2 images, 12 channels (groups 12), a 3x2 kernel, stride (2, 1), dilation (1, 2), pads t1 l0
  // b2 r1: every window position reads padding somewhere.
  auto w = ss::conv2d_workload({2, 12, 9, 11}, {12, 1, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2});
  ASSERT_TRUE(w.has_value()) << w.error().message;
  expect_matches_reference(make("depthwise_conv2d_nchw.cuda", *w), 12, /*relu=*/true);
}

TEST(CudaEmulation, DepthwiseConv2dNchwMobileNetLayerMatchesTheReference) {
  auto w = ss::conv2d_workload({1, 32, 28, 28}, {32, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1});
  ASSERT_TRUE(w.has_value()) << w.error().message;
  expect_matches_reference(make("depthwise_conv2d_nchw.cuda", *w), 6, false);
}

TEST(CudaEmulation, WinogradF2WithBatchAndAsymmetricPaddingMatchesTheReference) {
  // Height 9 (not a multiple of 8): F(2x2, 3x3); pads t1 l2 b1 r2 as in TopHub's V100 records;
  // 13 output columns leave a partial last tile.
  auto w = ss::conv2d_workload({2, 16, 9, 11}, {12, 16, 3, 3}, {1, 1}, {1, 2, 1, 2}, {1, 1});
  ASSERT_TRUE(w.has_value()) << w.error().message;
  const ss::Task task = make("conv2d_nchw_winograd.cuda", *w);
  expect_matches_reference(task, 10, /*relu=*/true);
  auto space = *ss::make_config_space(task);
  EXPECT_EQ(ss::conv2d_nchw_winograd_cuda_schedule(*w, space, *space.config_at(0)).m, 2);
}

TEST(CudaEmulation, WinogradF4MatchesTheReference) {
  // Height 16: F(4x4, 3x3).
  const ss::Task task = make("conv2d_nchw_winograd.cuda", ss::square_conv2d(24, 16, 32, 3, 1));
  expect_matches_reference(task, 6, false);
  auto space = *ss::make_config_space(task);
  EXPECT_EQ(ss::conv2d_nchw_winograd_cuda_schedule(std::get<ss::Conv2dWorkload>(task.workload),
                                                   space, *space.config_at(0))
                .m,
            4);
}

TEST(CudaEmulation, Conv2dNchwResNetLikeLayerMatchesTheReference) {
  expect_matches_reference(make("conv2d_nchw.cuda", ss::square_conv2d(16, 14, 32, 3, 1)), 5, false);
}

TEST(CudaEmulation, DenseSmallBatchMatchesTheReference) {
  // K = 24: thread counts that are not powers of two exercise the tree reduction's tail.
  expect_matches_reference(make("dense_small_batch.gpu", ss::DenseWorkload{3, 20, 24}), 8, true);
}

TEST(CudaEmulation, DenseLargeBatchMatchesTheReference) {
  expect_matches_reference(make("dense_large_batch.gpu", ss::DenseWorkload{128, 64, 48}), 6, false);
}

// Both weight layouts, sizes whose tiles are not powers of two, three batch entries (blockIdx.z),
// a per-column bias and relu in the epilogue.
TEST(CudaEmulation, BatchMatmulOfBothWeightLayoutsMatchesTheReference) {
  for (bool transpose_b : {true, false})
    expect_matches_reference(
        make("batch_matmul.cuda", ss::BatchMatmulWorkload{3, 12, 20, 24, transpose_b}), 8, true);
}

// attention.cuda against the double reference for sampled configs: tails of rows and keys (7
// rows, 37 keys), values narrower than a row of threads (Dv 5: idle columns), masks broadcast
// over heads and rows or given per row, none, and a bias and relu in the epilogue.
TEST(CudaEmulation, AttentionMatchesTheReference) {
  for (const ss::AttentionWorkload& w : {ss::AttentionWorkload{3, 7, 37, 8, 20, 3, 7, 0.7},
                                         ss::AttentionWorkload{6, 4, 20, 8, 5, 2, 1, 0.5},
                                         ss::AttentionWorkload{2, 16, 64, 16, 16, 0, 0, 0.25}}) {
    SCOPED_TRACE(ss::describe_workload(w));
    expect_matches_reference(make("attention.cuda", w), 8, true);
  }
}

// A network's attention kernel takes v and the mask as its first operands
// (CudaKernelOptions::inputs). Scores spread along the keys, so that each block's maximum is far
// above the last and every correction matters; the last 9 keys of each row masked by -infinity
// (a padded sequence) and row 1's first 20 too, so that its first blocks hold no key (their
// exponentials 0, not NaN).
TEST(CudaEmulation, NetworkAttentionTakesVAndTheMaskAsOperands) {
  const ss::AttentionWorkload w{2, 3, 40, 8, 8, 1, 3, 0.5};
  const ss::Task task = make("attention.cuda", w);
  auto space = ss::make_config_space(task);
  ASSERT_TRUE(space.has_value());
  const ss::OperandShapes shapes = ss::operand_shapes(w);
  Tensor data = Tensor::zeros(shapes.data), weight = Tensor::zeros(shapes.weight);
  tt::fill_uniform(data, 31);
  tt::fill_uniform(weight, 32);
  const ss::AttentionOperandOffsets at = ss::attention_operand_offsets(w);
  for (int64_t b = 0; b < w.batch; ++b)
    for (int64_t k = 0; k < w.k; ++k)
      for (int64_t n = 0; n < w.n; ++n) weight.f32[(b * w.k + k) * w.n + n] *= 0.3f * n;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t n = 0; n < w.n; ++n)
      if (n >= 31 || (r == 1 && n < 20)) weight.f32[at.mask + r * w.n + n] = -INFINITY;
  const Tensor want = tt::measure::attention_reference(data, weight, nullptr, w);
  const auto configs = sample(task, *space, 8);
  EXPECT_GE(configs.size(), 4u);
  for (const ss::Config& c : configs) {
    cuda::CudaKernelOptions options;
    options.inputs = 2;
    auto k = cuda::emit_cuda_kernel(task, *space, c, options);
    ASSERT_TRUE(k.has_value()) << k.error().message;
    EXPECT_EQ(k->arg_count, 5);
    auto kernel = cuda::compile_for_emulation(*k);
    ASSERT_TRUE(kernel.has_value()) << kernel.error().message;
    Tensor out = Tensor::zeros(shapes.out);
    auto run = kernel->launch(data.f32.data(), weight.f32.data(), out.f32.data(),
                              {weight.f32.data() + at.v, weight.f32.data() + at.mask});
    ASSERT_TRUE(run.has_value()) << run.error().message;
    for (size_t j = 0; j < want.f32.size(); ++j)
      ASSERT_NEAR(out.f32[j], want.f32[j], 1e-4 * (1 + std::fabs(want.f32[j])))
          << space->describe(c) << " element " << j;
  }
  cuda::CudaKernelOptions wrong;
  wrong.inputs = 1;  // the template takes v and the mask
  auto refused = cuda::emit_cuda_kernel(task, *space, configs[0], wrong);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("takes 2 extra inputs, not 1"), std::string::npos)
      << refused.error().message;
}

// The space of BERT-base's attention: each split's thread and inner parts, blocks within the
// universal limits, and a default of 16 rows by blocks of 64 keys.
TEST(CudaKernels, AttentionSpaceAndDefault) {
  const ss::AttentionWorkload w{12, 128, 128, 64, 64, 1, 1, 0.125};
  const ss::Task task = make("attention.cuda", w);
  auto space = ss::make_config_space(task);
  ASSERT_TRUE(space.has_value());
  const ss::Config def = ss::default_config(task, *space);
  ASSERT_TRUE(space->is_valid(def));
  const ss::AttentionCudaSchedule s = ss::attention_cuda_schedule(w, *space, def);
  EXPECT_EQ(s.tile_m(), 16);
  EXPECT_EQ(s.tile_n(), 64);
  EXPECT_EQ(s.threads(), 128);
  EXPECT_EQ(s.y[0], 8);
  EXPECT_EQ(s.x[0], 2);
  // q [64][16], k^T or v [64][64], the exponentials [16][64], two tables [16][16].
  EXPECT_EQ(s.shared_bytes(), 4 * (64 * 16 + 64 * 64 + 16 * 64 + 2 * 16 * 16));
  int64_t valid = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    if (!space->is_valid_index(i)) continue;
    ++valid;
    const ss::AttentionCudaSchedule t =
        ss::attention_cuda_schedule(w, *space, *space->config_at(i));
    EXPECT_LE(t.threads(), 1024);
    EXPECT_LE(t.shared_bytes(), 48 * 1024);
    EXPECT_LE(t.accumulators(), ss::kMaxCudaAccumulators);
  }
  EXPECT_GT(valid, 100);
  EXPECT_LT(valid, space->size());  // 128 x 128 tiles do not fit

  // Heads of 256: the preferred tiles' 88 KiB do not fit; the default is the largest that does
  // within 16 x 64 and 128 threads, not the space's first valid config.
  const ss::AttentionWorkload wide{12, 128, 128, 256, 256, 1, 1, 0.0625};
  const ss::Task wide_task = make("attention.cuda", wide);
  auto wide_space = ss::make_config_space(wide_task);
  ASSERT_TRUE(wide_space.has_value());
  const ss::Config wide_default = ss::default_config(wide_task, *wide_space);
  ASSERT_TRUE(wide_space->is_valid(wide_default));
  const ss::AttentionCudaSchedule d = ss::attention_cuda_schedule(wide, *wide_space, wide_default);
  EXPECT_LE(d.shared_bytes(), 48 * 1024);
  EXPECT_GE(d.tile_m() * d.tile_n(), 256);
  EXPECT_EQ(d.threads(), 128);
}

/// A task's operands (uniform data and weights from two seeds) and the reference output, NCHW.
struct ReferenceCase {
  ss::OperandShapes shapes;
  Tensor data, weight, plain;
};

ReferenceCase reference_case(const ss::Task& task, uint64_t data_seed, uint64_t weight_seed) {
  ReferenceCase c{ss::operand_shapes(task.workload), {}, {}, {}};
  c.data = Tensor::zeros(c.shapes.data);
  c.weight = Tensor::zeros(c.shapes.weight);
  tt::fill_uniform(c.data, data_seed);
  tt::fill_uniform(c.weight, weight_seed);
  c.plain = tt::measure::reference_output(task.workload, c.data, c.weight, nullptr);
  return c;
}

// The fusion rules' whole epilogue vocabulary (what compiled networks fuse: batch-norm scale and
// shift, residual add, clip), in order, for every template, against the reference conv/dense
// followed by the same steps in the output's layout.
TEST(CudaEmulation, EveryEpilogueStepMatchesTheReference) {
  using Op = tt::epilogue::EpilogueOp;
  cuda::CudaKernelOptions options;
  options.epilogue = {{Op::Kind::kMulChannel, 0}, {Op::Kind::kAddChannel, 1},
                      {Op::Kind::kAddTensor, 2},  {Op::Kind::kRelu},
                      {Op::Kind::kMulTensor, 3},  {Op::Kind::kClip, -1, -0.25f, 0.5f}};
  const std::vector<ss::Task> tasks{
      make("conv2d_nchw.cuda", ss::square_conv2d(6, 7, 8, 3, 1)),
      make("conv2d_NCHWc.cuda", ss::square_conv2d(6, 7, 8, 3, 1)),
      make("depthwise_conv2d_nchw.cuda",
           *ss::conv2d_workload({1, 8, 7, 7}, {8, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1})),
      make("conv2d_nchw_winograd.cuda", ss::square_conv2d(6, 7, 8, 3, 1)),
      make("dense_small_batch.gpu", ss::DenseWorkload{2, 12, 20}),
      make("dense_large_batch.gpu", ss::DenseWorkload{64, 64, 24}),
  };
  for (const ss::Task& task : tasks) {
    auto space = ss::make_config_space(task);
    ASSERT_TRUE(space.has_value());
    const ss::Template& t = ss::template_of(task);
    const auto [shapes, data, weight, plain] = reference_case(task, 41, 42);
    const int64_t channels = shapes.bias[0];
    Tensor scale = Tensor::zeros({channels}), shift = Tensor::zeros({channels});
    tt::fill_uniform(scale, 43);
    tt::fill_uniform(shift, 44);
    for (const ss::Config& c : sample(task, *space, 3)) {
      const ss::KernelSignature sig = t.signature(task, *space, c);
      Tensor residual = Tensor::zeros(sig.out_shape), gate = Tensor::zeros(sig.out_shape);
      tt::fill_uniform(residual, 45);
      tt::fill_uniform(gate, 46);
      // The reference in the kernel's output layout; the channel of each element from a plain
      // tensor holding its channel index, moved to that layout the same way.
      const Tensor want_in = t.output_from_plain(sig, plain);
      Tensor channel_of = Tensor::zeros(plain.shape);
      const int64_t inner = plain.size() / (plain.shape[0] * channels);
      for (int64_t i = 0; i < plain.size(); ++i)
        channel_of.f32[i] = std::holds_alternative<ss::DenseWorkload>(task.workload)
                                ? static_cast<float>(i % channels)
                                : static_cast<float>(i / inner % channels);
      const Tensor channel_in = t.output_from_plain(sig, channel_of);
      std::vector<float> want(want_in.f32.size());
      for (size_t i = 0; i < want.size(); ++i) {
        const auto ch = static_cast<size_t>(channel_in.f32[i]);
        float v = want_in.f32[i] * scale.f32[ch] + shift.f32[ch] + residual.f32[i];
        v = std::max(v, 0.0f) * gate.f32[i];
        want[i] = std::min(std::max(v, -0.25f), 0.5f);
      }
      auto k = cuda::emit_cuda_kernel(task, *space, c, options);
      ASSERT_TRUE(k.has_value()) << k.error().message;
      EXPECT_EQ(k->epilogue_operands, 4);
      auto kernel = cuda::compile_for_emulation(*k);
      ASSERT_TRUE(kernel.has_value()) << kernel.error().message;
      const ss::PackedOperands packed = t.pack_operands(sig, data, weight);
      std::vector<float> out(want.size(), std::nanf(""));
      ASSERT_TRUE(
          kernel
              ->launch(packed.data.f32.data(), packed.weight.f32.data(), out.data(),
                       {scale.f32.data(), shift.f32.data(), residual.f32.data(), gate.f32.data()})
              .has_value());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(out[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
            << task.template_name << " " << space->describe(c) << " element " << i;
      // The wrong number of operands is refused, not run.
      EXPECT_FALSE(kernel
                       ->launch(packed.data.f32.data(), packed.weight.f32.data(), out.data(),
                                {scale.f32.data()})
                       .has_value());
    }
  }
}

// An epilogue that quantizes (divide by the scale, round, add the zero point, clip to the byte's
// range) and ends in kToUInt8 stores one byte per element: the kernel's `out` is unsigned char.
TEST(CudaEmulation, AQuantizingEpilogueStoresBytes) {
  using Op = tt::epilogue::EpilogueOp;
  cuda::CudaKernelOptions options;
  options.epilogue = {{Op::Kind::kDivChannel, 0},
                      {Op::Kind::kRound},
                      {Op::Kind::kAddChannel, 1},
                      {Op::Kind::kClip, -1, 0.0f, 255.0f},
                      {Op::Kind::kToUInt8}};
  const std::vector<ss::Task> tasks{
      make("conv2d_nchw.cuda", ss::square_conv2d(6, 7, 8, 3, 1)),
      make("depthwise_conv2d_nchw.cuda",
           *ss::conv2d_workload({1, 8, 7, 7}, {8, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1})),
  };
  constexpr float kScale = 0.01f, kZero = 100.0f;
  for (const ss::Task& task : tasks) {
    auto space = ss::make_config_space(task);
    ASSERT_TRUE(space.has_value());
    const ss::Template& t = ss::template_of(task);
    const auto [shapes, data, weight, plain] = reference_case(task, 51, 52);
    const int64_t channels = shapes.bias[0];
    const std::vector<float> scale(static_cast<size_t>(channels), kScale);
    const std::vector<float> zero(static_cast<size_t>(channels), kZero);
    for (const ss::Config& c : sample(task, *space, 3)) {
      const ss::KernelSignature sig = t.signature(task, *space, c);
      const Tensor want_in = t.output_from_plain(sig, plain);
      auto k = cuda::emit_cuda_kernel(task, *space, c, options);
      ASSERT_TRUE(k.has_value()) << k.error().message;
      EXPECT_NE(k->source.find("unsigned char* __restrict__ out"), std::string::npos);
      auto kernel = cuda::compile_for_emulation(*k);
      ASSERT_TRUE(kernel.has_value()) << kernel.error().message;
      const ss::PackedOperands packed = t.pack_operands(sig, data, weight);
      std::vector<uint8_t> out(want_in.f32.size() + 64, 0xEE);  // bytes past the end stay
      ASSERT_TRUE(kernel
                      ->launch(packed.data.f32.data(), packed.weight.f32.data(),
                               reinterpret_cast<float*>(out.data()), {scale.data(), zero.data()})
                      .has_value());
      size_t equal = 0;
      for (size_t i = 0; i < want_in.f32.size(); ++i) {
        const float want =
            std::min(std::max(std::nearbyint(want_in.f32[i] / kScale) + kZero, 0.0f), 255.0f);
        ASSERT_LE(std::fabs(out[i] - want), 1.0f) << task.template_name << " element " << i;
        equal += out[i] == want;
      }
      EXPECT_GE(equal * 100, want_in.f32.size() * 95) << task.template_name;
      for (size_t i = want_in.f32.size(); i < out.size(); ++i) ASSERT_EQ(out[i], 0xEE);
    }
  }
}

TEST(CudaEmulation, ADivergentBarrierIsReportedNotWaitedOn) {
  cuda::CudaKernelSource k;
  k.entry = "divergent";
  k.block = {4, 1, 1};
  k.source = R"(extern "C" __global__ void divergent(const float* data, const float* weight,
                                            float* out) {
    if (threadIdx.x == 2) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
  })";
  auto kernel = cuda::compile_for_emulation(k);
  ASSERT_TRUE(kernel.has_value()) << kernel.error().message;
  float out[4] = {};
  const tt::Status s = kernel->launch(nullptr, nullptr, out);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("divergent barrier"), std::string::npos) << s.error().message;
}

TEST(CudaEmulation, SharedMemoryIsSharedWithinABlockAndBarriersOrderIt) {
  // Each thread writes its slot, meets the others, then reads its neighbour's.
  cuda::CudaKernelSource k;
  k.entry = "rotate";
  k.grid = {2, 1, 1};
  k.block = {8, 1, 1};
  k.source = R"(extern "C" __global__ void rotate(const float* data, const float* weight,
                                         float* out) {
    __shared__ float s[8];
    const int i = blockIdx.x * 8 + threadIdx.x;
    s[threadIdx.x] = data[i];
    __syncthreads();
    out[i] = s[(threadIdx.x + 1) % 8];
  })";
  auto kernel = cuda::compile_for_emulation(k);
  ASSERT_TRUE(kernel.has_value()) << kernel.error().message;
  std::vector<float> in(16), out(16);
  for (int i = 0; i < 16; ++i) in[i] = static_cast<float>(i);
  ASSERT_TRUE(kernel->launch(in.data(), nullptr, out.data()).has_value());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[i], static_cast<float>((i / 8) * 8 + (i + 1) % 8));
}

TEST(CudaKernels, AnInvalidConfigIsRefusedBeforeAnyCode) {
  const ss::Task task = make("dense_small_batch.gpu", ss::DenseWorkload{1, 8, 4096});
  auto space = ss::make_config_space(task);
  ASSERT_TRUE(space.has_value());
  int64_t invalid = -1;
  for (int64_t i = 0; i < space->size() && invalid < 0; ++i)
    if (!space->is_valid_index(i)) invalid = i;
  ASSERT_GE(invalid, 0) << "4096 has inner factors above 1024 threads";
  auto k = cuda::emit_cuda_kernel(task, *space, *space->config_at(invalid));
  ASSERT_FALSE(k.has_value());
  EXPECT_EQ(k.error().code, tt::ErrorCode::kFailedPrecondition);
  EXPECT_NE(k.error().message.find("invalid"), std::string::npos);
}

TEST(CudaKernels, CudaTemplatesNeedACudaTarget) {
  auto task = ss::make_task("conv2d_nchw.cuda", ss::square_conv2d(8, 8, 8, 3, 1),
                            ss::Target{"llvm -keys=cpu", 16});
  ASSERT_FALSE(task.has_value());
  EXPECT_NE(task.error().message.find("needs a cuda target"), std::string::npos)
      << task.error().message;
  EXPECT_FALSE(ss::cuda_compute_capability("cuda -arch=sm_").has_value());
  EXPECT_EQ(*ss::cuda_compute_capability("cuda -keys=cuda,gpu -arch=sm_86 -max_num_threads=1024"),
            86);
}

#ifdef TT_WITH_CUDA
// Every sampled config of ResNet-18-sized workloads compiles through NVRTC to PTX and assembles
// for sm_80 and sm_90 with the registers and shared memory a GPU allows.
TEST(CudaNvrtc, SampledConfigsCompileAndAssembleWithinTheLimits) {
  if (auto s = cuda::nvrtc_available(); !s.has_value()) GTEST_SKIP() << s.error().message;
  if (auto p = cuda::ptxas_path(); !p) GTEST_SKIP() << p.error().message;
  const std::vector<ss::Task> tasks{
      make("conv2d_nchw.cuda", ss::square_conv2d(64, 56, 64, 3, 1)),
      make("conv2d_nchw.cuda", ss::square_conv2d(256, 14, 512, 1, 2)),
      make("conv2d_NCHWc.cuda", ss::square_conv2d(64, 56, 64, 3, 1)),
      make("conv2d_NCHWc.cuda", ss::square_conv2d(512, 7, 512, 3, 1)),
      make("depthwise_conv2d_nchw.cuda",
           *ss::conv2d_workload({1, 96, 112, 112}, {96, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1})),
      make("depthwise_conv2d_nchw.cuda",
           *ss::conv2d_workload({1, 960, 7, 7}, {960, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1})),
      make("conv2d_nchw_winograd.cuda", ss::square_conv2d(64, 56, 64, 3, 1)),
      make("conv2d_nchw_winograd.cuda", ss::square_conv2d(512, 7, 512, 3, 1)),
      make("dense_small_batch.gpu", ss::DenseWorkload{1, 1000, 512}),
      make("dense_large_batch.gpu", ss::DenseWorkload{256, 1024, 1024}),
      // BERT-base's attention: Q K^T (AutoTVM's layout) and the product with V (exporters').
      make("batch_matmul.cuda", ss::BatchMatmulWorkload{12, 128, 128, 64, true}),
      make("batch_matmul.cuda", ss::BatchMatmulWorkload{12, 128, 64, 128, false}),
      // Fused: BERT-base's heads with its padding mask, ViT-B/16's 197 tokens (tails), a head of
      // 128 values (GPT-style models').
      make("attention.cuda", ss::AttentionWorkload{12, 128, 128, 64, 64, 1, 1, 0.125}),
      make("attention.cuda", ss::AttentionWorkload{12, 197, 197, 64, 64, 0, 0, 0.125}),
      make("attention.cuda", ss::AttentionWorkload{12, 128, 128, 128, 128, 1, 128, 0.088}),
  };
  for (const ss::Task& task : tasks) {
    auto space = ss::make_config_space(task);
    ASSERT_TRUE(space.has_value());
    for (const ss::Config& c : sample(task, *space, 4)) {
      auto k =
          cuda::emit_cuda_kernel(task, *space, c, cuda::CudaKernelOptions::bias_relu(true, true));
      ASSERT_TRUE(k.has_value()) << k.error().message;
      auto compiled = cuda::nvrtc_compile(*k, 80, /*cubin=*/false);
      ASSERT_TRUE(compiled.has_value()) << compiled.error().message << "\n" << k->source;
      EXPECT_NE(compiled->ptx.find(".entry " + k->entry), std::string::npos);
      for (int cc : {80, 90}) {
        auto report = cuda::assemble_ptx(compiled->ptx, cc);
        ASSERT_TRUE(report.has_value()) << report.error().message;
        EXPECT_EQ(report->shared_bytes, k->shared_bytes) << space->describe(c);
        ss::GpuKernelUsage usage = k->usage();
        usage.registers_per_thread = report->registers;
        EXPECT_TRUE(ss::check_gpu_limits(usage, ss::kUniversalGpuLimits).has_value())
            << task.template_name << " " << space->describe(c) << " sm_" << cc << ": "
            << report->log;
      }
    }
  }
}

// Where there is no GPU, the driver says why; where there is one, every sampled config of each
// template runs on it and matches the reference.
TEST(CudaDriver, ListsGpusOrSaysWhyNot) {
  auto gpus = cuda::list_gpus();
  if (!gpus) {
    EXPECT_EQ(gpus.error().code, tt::ErrorCode::kUnavailable);
    EXPECT_NE(gpus.error().message.find("CUDA driver"), std::string::npos) << gpus.error().message;
    GTEST_SKIP() << "no GPU: " << gpus.error().message;
  }
  for (const cuda::GpuDevice& d : *gpus) {
    EXPECT_GE(d.compute_capability, 50) << d.name;
    EXPECT_GE(d.limits.max_threads_per_block, 1024) << d.name;
    EXPECT_GE(d.limits.max_shared_bytes_per_block, 48 * 1024) << d.name;
  }
  const std::vector<ss::Task> tasks{
      make("conv2d_nchw.cuda", ss::square_conv2d(16, 14, 32, 3, 1)),
      make("depthwise_conv2d_nchw.cuda",
           *ss::conv2d_workload({2, 24, 15, 13}, {24, 1, 3, 3}, {2, 1}, {1, 0, 2, 1}, {1, 1})),
      make("conv2d_nchw_winograd.cuda",
           *ss::conv2d_workload({2, 16, 9, 11}, {12, 16, 3, 3}, {1, 1}, {1, 2, 1, 2}, {1, 1})),
      make("dense_small_batch.gpu", ss::DenseWorkload{3, 20, 24}),
      make("dense_large_batch.gpu", ss::DenseWorkload{128, 64, 48}),
      // The tensor cores at each precision, edges in M and N (the reference rounds the inputs
      // as each does).
      make("dense_tensorcore.cuda", ss::DenseWorkload{37, 45, 40, ss::Precision::kFloat16}),
      make("dense_tensorcore.cuda", ss::DenseWorkload{64, 96, 72, ss::Precision::kTf32}),
      make("dense_tensorcore.cuda", ss::DenseWorkload{32, 48, 64, ss::Precision::kBFloat16}),
      make("dense_tensorcore.cuda", ss::DenseWorkload{37, 45, 264, ss::Precision::k3xTf32}),
      make("conv2d_nchw_tensorcore.cuda",
           [] {
             auto w =
                 *ss::conv2d_workload({2, 16, 9, 11}, {24, 16, 3, 3}, {2, 1}, {1, 0, 2, 1}, {1, 1});
             w.precision = ss::Precision::kTf32;
             return w;
           }()),
      make("batch_matmul_tensorcore.cuda",
           ss::BatchMatmulWorkload{3, 40, 24, 32, false, ss::Precision::kFloat16}),
  };
  for (const ss::Task& task : tasks) {
    auto space = ss::make_config_space(task);
    ASSERT_TRUE(space.has_value());
    const ss::OperandShapes shapes = ss::operand_shapes(task.workload);
    Tensor data = Tensor::zeros(shapes.data), weight = Tensor::zeros(shapes.weight),
           bias = Tensor::zeros(shapes.bias);
    tt::fill_uniform(data, 31);
    tt::fill_uniform(weight, 32);
    tt::fill_uniform(bias, 33);
    const Tensor want = tt::measure::reference_output(task.workload, data, weight, &bias);
    for (const ss::Config& c : sample(task, *space, 6)) {
      auto k =
          cuda::emit_cuda_kernel(task, *space, c, cuda::CudaKernelOptions::bias_relu(true, false));
      ASSERT_TRUE(k.has_value()) << k.error().message;
      // The kernel's own layouts (Winograd's weight is U, transformed ahead of time).
      const ss::Template& tmpl = ss::template_of(task);
      const ss::KernelSignature sig = tmpl.signature(task, *space, c);
      const ss::PackedOperands packed = tmpl.pack_operands(sig, data, weight);
      Tensor got = Tensor::zeros(sig.out_shape);
      auto run = cuda::run_on_gpu(gpus->front(), *k, packed.data.f32, packed.weight.f32, {bias.f32},
                                  static_cast<int64_t>(got.f32.size()), 3);
      ASSERT_TRUE(run.has_value()) << run.error().message;
      EXPECT_GT(run->seconds_per_run, 0);
      got.f32 = run->out;
      got = tmpl.output_to_plain(sig, got);
      ASSERT_EQ(got.f32.size(), want.f32.size());
      for (size_t j = 0; j < want.f32.size(); ++j)
        ASSERT_NEAR(got.f32[j], want.f32[j], 1e-4 * (1 + std::fabs(want.f32[j])))
            << space->describe(c) << " element " << j;
    }
  }
}

// Tensor-core configs whose tiles need more than 48 KiB of shared memory (dynamic, the function
// opted into it at load) run on the GPU at its own architecture: the largest the GPU allows and
// one just past 48 KiB, each against the rounded reference.
TEST(CudaDriver, DynamicSharedMemoryKernelsRunOnTheGpu) {
  auto gpus = cuda::list_gpus();
  if (!gpus) GTEST_SKIP() << "no GPU: " << gpus.error().message;
  const cuda::GpuDevice& gpu = gpus->front();
  if (gpu.compute_capability < 80) GTEST_SKIP() << "sm_" << gpu.compute_capability << ": no mma";
  auto task = ss::make_task("dense_tensorcore.cuda",
                            ss::DenseWorkload{256, 256, 512, ss::Precision::kFloat16},
                            ss::Target{ss::cuda_target_spec(gpu.compute_capability), 1});
  ASSERT_TRUE(task.has_value()) << task.error().message;
  auto space = ss::make_config_space(*task);
  const ss::GemmExtents e = ss::gemm_extents(task->workload);
  std::optional<ss::Config> smallest, largest;
  int64_t low = INT64_MAX, high = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    if (!space->is_valid_index(i)) continue;
    const ss::Config c = *space->config_at(i);
    const ss::TensorcoreSchedule sc = ss::tensorcore_schedule(e, *space, c);
    if (!sc.dynamic_shared() || sc.shared_bytes() > gpu.limits.max_dynamic_shared_bytes_per_block)
      continue;
    if (sc.shared_bytes() < low) low = sc.shared_bytes(), smallest = c;
    if (sc.shared_bytes() > high) high = sc.shared_bytes(), largest = c;
  }
  ASSERT_TRUE(smallest && largest) << "no dynamic shared memory config for " << gpu.name;
  const ss::OperandShapes shapes = ss::operand_shapes(task->workload);
  Tensor data = Tensor::zeros(shapes.data), weight = Tensor::zeros(shapes.weight),
         bias = Tensor::zeros(shapes.bias);
  tt::fill_uniform(data, 34);
  tt::fill_uniform(weight, 35);
  tt::fill_uniform(bias, 36);
  const Tensor want = tt::measure::reference_output(task->workload, data, weight, &bias);
  for (const ss::Config& c : {*smallest, *largest}) {
    auto k =
        cuda::emit_cuda_kernel(*task, *space, c, cuda::CudaKernelOptions::bias_relu(true, false));
    ASSERT_TRUE(k.has_value()) << k.error().message;
    ASSERT_GT(k->dynamic_shared_bytes, 48 * 1024);
    auto run = cuda::run_on_gpu(gpu, *k, data.f32, weight.f32, {bias.f32},
                                static_cast<int64_t>(want.f32.size()), 3);
    ASSERT_TRUE(run.has_value()) << space->describe(c) << ": " << run.error().message;
    for (size_t j = 0; j < want.f32.size(); ++j)
      ASSERT_NEAR(run->out[j], want.f32[j], 1e-4 * (1 + std::fabs(want.f32[j])))
          << space->describe(c) << " (" << k->dynamic_shared_bytes << " bytes) element " << j;
  }
}
#endif

}  // namespace
