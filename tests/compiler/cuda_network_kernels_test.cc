// The CUDA kernels of compiled networks that no template computes (element-wise chains,
// pooling, depthwise convolution): numerics in the CPU emulation against naive loops written
// here, several in one emulated module, and (with the CUDA Toolkit) NVRTC + ptxas for sm_80.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "compiler/codegen/cuda/emulator.h"
#include "compiler/codegen/cuda/network_kernels.h"
#include "compiler/codegen/cuda/source_writer.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/nvrtc.h"
#endif

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
namespace cuda = tensortune::codegen::cuda;
using tt::codegen::ElementwiseInstr;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

void run_emulated(const cuda::CudaKernelSource& k, const std::vector<float*>& args) {
  auto module = cuda::compile_module_for_emulation({k});
  ASSERT_TRUE(module.has_value()) << module.error().message << "\n" << k.source;
  const tt::Status s = module->launch(0, args);
  ASSERT_TRUE(s.has_value()) << s.error().message;
}

// out[n, c, h, w] = hardswish(sigmoid(x * s[c]) - y[0]) / z[n, c, h, w] + clip(x, 0, 6): a
// per-channel operand, a scalar one, a full one, every unary op once.
TEST(CudaNetworkKernels, ElementwiseChainWithBroadcastsMatchesNaiveLoops) {
  tt::codegen::ElementwiseKernelSpec spec;
  spec.out_shape = {2, 3, 4, 5};
  spec.operand_strides = {{60, 20, 5, 1}, {0, 1, 0, 0}, {0, 0, 0, 0}, {60, 20, 5, 1}};
  using Op = ElementwiseInstr::Op;
  spec.program = {
      {Op::kMultiply, 0, 1},          // r0 = x * s
      {Op::kSigmoid, -1},             // r1
      {Op::kSubtract, -2, 2},         // r2 = r1 - y
      {Op::kHardSwish, -3},           // r3
      {Op::kDivide, -4, 3},           // r4 = r3 / z
      {Op::kClip, 0, 0, 0.0f, 6.0f},  // r5 = clip(x, 0, 6): integral bounds ("0.0f", "6.0f")
      {Op::kAdd, -5, -6},             // r6 = r4 + r5
      {Op::kHardSigmoid, -7, 0, 0.2f, 0.5f},
      {Op::kRelu, -8},
      {Op::kIdentity, -9},
  };
  auto x = random_floats(120, 1), s = random_floats(3, 2), y = random_floats(1, 3),
       z = random_floats(120, 4);
  for (float& v : z) v = v >= 0 ? v + 0.5f : v - 0.5f;  // no division by ~0
  std::vector<float> want(120);
  for (size_t i = 0; i < 120; ++i) {
    const size_t c = i / 20 % 3;
    const float r0 = x[i] * s[c];
    const float r1 = static_cast<float>(1.0 / (1.0 + std::exp(-double(r0))));
    const float r2 = r1 - y[0];
    const float r3 = r2 * std::max(0.0f, std::min(1.0f, r2 / 6.0f + 0.5f));
    const float r4 = r3 / z[i];
    const float r5 = std::min(std::max(x[i], 0.0f), 6.0f);
    const float r7 = std::max(0.0f, std::min(1.0f, 0.2f * (r4 + r5) + 0.5f));
    want[i] = r7 > 0 ? r7 : 0.0f;
  }
  const cuda::CudaKernelSource k = cuda::emit_elementwise_kernel(spec, "chain");
  EXPECT_EQ(k.arg_count, 5);
  std::vector<float> out(120, std::nanf(""));
  run_emulated(k, {out.data(), x.data(), s.data(), y.data(), z.data()});
  for (size_t i = 0; i < 120; ++i) ASSERT_NEAR(out[i], want[i], 1e-6) << "element " << i;
}

// Max pooling over a blocked layout (block 4) with padding, stride and dilation; windows that
// hang over the edge take the maximum of what is inside.
TEST(CudaNetworkKernels, MaxPoolWithPaddingInABlockedLayoutMatchesNaiveLoops) {
  tt::codegen::MaxPoolKernelSpec p;
  p.in_shape = {2, 2, 7, 6, 4};  // N, C/b, H, W, b
  p.kernel_h = 3, p.kernel_w = 2, p.stride_h = 2, p.stride_w = 1, p.pad_top = 1, p.pad_left = 1;
  p.dilation_h = 1, p.dilation_w = 2;
  p.out_h = (7 + 1 + 1 - 3) / 2 + 1;  // pads 1 top, 1 bottom
  p.out_w = (6 + 1 + 0 - 3) / 1 + 1;  // effective kernel width 3; pads 1 left, 0 right
  const int64_t N = 2, CB = 2, H = 7, W = 6, B = 4;
  auto x = random_floats(static_cast<size_t>(N * CB * H * W * B), 5);
  std::vector<float> want(static_cast<size_t>(N * CB * p.out_h * p.out_w * B));
  for (int64_t plane = 0; plane < N * CB; ++plane)
    for (int64_t oh = 0; oh < p.out_h; ++oh)
      for (int64_t ow = 0; ow < p.out_w; ++ow)
        for (int64_t b = 0; b < B; ++b) {
          float best = -std::numeric_limits<float>::infinity();
          for (int64_t kh = 0; kh < p.kernel_h; ++kh)
            for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
              const int64_t ih = oh * p.stride_h + kh * p.dilation_h - p.pad_top;
              const int64_t iw = ow * p.stride_w + kw * p.dilation_w - p.pad_left;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              best = std::max(best, x[static_cast<size_t>(((plane * H + ih) * W + iw) * B + b)]);
            }
          want[static_cast<size_t>(((plane * p.out_h + oh) * p.out_w + ow) * B + b)] = best;
        }
  std::vector<float> out(want.size(), std::nanf(""));
  run_emulated(cuda::emit_max_pool_kernel(p, "pool"), {out.data(), x.data()});
  EXPECT_EQ(out, want);
}

TEST(CudaNetworkKernels, GlobalAveragePoolInPlainAndBlockedLayoutsMatchesNaiveLoops) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{2, 5, 3, 4}, std::vector<int64_t>{2, 3, 3, 4, 8}}) {
    const int64_t NC = shape[0] * shape[1], HW = shape[2] * shape[3],
                  B = shape.size() == 5 ? shape[4] : 1;
    auto x = random_floats(static_cast<size_t>(NC * HW * B), 6);
    std::vector<float> want(static_cast<size_t>(NC * B));
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t b = 0; b < B; ++b) {
        double sum = 0;
        for (int64_t j = 0; j < HW; ++j) sum += x[static_cast<size_t>((nc * HW + j) * B + b)];
        want[static_cast<size_t>(nc * B + b)] = static_cast<float>(sum / double(HW));
      }
    std::vector<float> out(want.size(), std::nanf(""));
    run_emulated(cuda::emit_global_avg_pool_kernel(shape, "gap"), {out.data(), x.data()});
    EXPECT_EQ(out, want) << shape.size() << "-d";
  }
}

// Depthwise 3x3, stride 2, uneven padding, block 4, with a per-channel shift and clip(0, 6)
// fused (MobileNet's pattern).
TEST(CudaNetworkKernels, DepthwiseConvWithEpilogueMatchesNaiveLoops) {
  using Op = tt::epilogue::EpilogueOp;
  // batch, in channels, height, width, out channels, kernel, stride, pads t l b r, dilation
  const ss::Conv2dWorkload w{1, 8, 9, 8, 8, 3, 3, 2, 2, 1, 0, 1, 1, 1, 1};
  tt::codegen::DepthwiseKernelSpec spec;
  spec.workload = w;
  spec.block = 4;
  spec.epilogue = {{Op::Kind::kAddChannel, 0}, {Op::Kind::kClip, -1, 0.0f, 6.0f}};
  const int64_t B = 4, CB = 2, H = 9, W = 8, OH = w.out_height(), OW = w.out_width();
  auto x = random_floats(static_cast<size_t>(CB * H * W * B), 7);
  auto k = random_floats(static_cast<size_t>(CB * 9 * B), 8);
  auto shift = random_floats(8, 9);
  std::vector<float> want(static_cast<size_t>(CB * OH * OW * B));
  for (int64_t cb = 0; cb < CB; ++cb)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t b = 0; b < B; ++b) {
          float acc = 0;
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw) {
              const int64_t ih = oh * 2 + kh - 1, iw = ow * 2 + kw;  // pad top 1, left 0
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              acc += x[static_cast<size_t>(((cb * H + ih) * W + iw) * B + b)] *
                     k[static_cast<size_t>((cb * 9 + kh * 3 + kw) * B + b)];
            }
          want[static_cast<size_t>(((cb * OH + oh) * OW + ow) * B + b)] =
              std::min(std::max(acc + shift[static_cast<size_t>(cb * B + b)], 0.0f), 6.0f);
        }
  const cuda::CudaKernelSource kernel = cuda::emit_depthwise_conv_kernel(spec, "dw");
  EXPECT_EQ(kernel.arg_count, 4);
  std::vector<float> out(want.size(), std::nanf(""));
  run_emulated(kernel, {x.data(), k.data(), out.data(), shift.data()});
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << "element " << i;
}

// NCHW -> blocks of 4 -> blocks of 3 -> NCHW: the blocked tensor is the naive packing and the
// round trip gives the input back.
TEST(CudaNetworkKernels, LayoutTransformsPackAndRoundTrip) {
  const int64_t N = 2, C = 12, H = 3, W = 2, HW = H * W;
  auto x = random_floats(static_cast<size_t>(N * C * HW), 10);
  std::vector<float> want4(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t hw = 0; hw < HW; ++hw)
        want4[static_cast<size_t>(((n * (C / 4) + c / 4) * HW + hw) * 4 + c % 4)] =
            x[static_cast<size_t>((n * C + c) * HW + hw)];
  const auto to4 = cuda::emit_layout_transform_kernel({N, C, H, W}, 0, 4, "to4");
  const auto to3 = cuda::emit_layout_transform_kernel({N, C / 4, H, W, 4}, 4, 3, "to3");
  const auto back = cuda::emit_layout_transform_kernel({N, C / 3, H, W, 3}, 3, 0, "back");
  auto module = cuda::compile_module_for_emulation({to4, to3, back});
  ASSERT_TRUE(module.has_value()) << module.error().message;
  std::vector<float> b4(x.size()), b3(x.size()), plain(x.size());
  ASSERT_TRUE(module->launch(0, {b4.data(), x.data()}).has_value());
  ASSERT_TRUE(module->launch(1, {b3.data(), b4.data()}).has_value());
  ASSERT_TRUE(module->launch(2, {plain.data(), b3.data()}).has_value());
  EXPECT_EQ(b4, want4);
  EXPECT_EQ(plain, x);
}

TEST(CudaNetworkKernels, FloatLiteralsReadBackExactly) {
  EXPECT_EQ(cuda::float_literal(0.0f), "0.0f");
  EXPECT_EQ(cuda::float_literal(6.0f), "6.0f");
  EXPECT_EQ(cuda::float_literal(-0.25f), "-0.25f");
  EXPECT_EQ(cuda::float_literal(std::numeric_limits<float>::infinity()), "(1.0f / 0.0f)");
  const float tiny = 1.17549435e-38f;
  EXPECT_EQ(std::stof(cuda::float_literal(tiny)), tiny);
  EXPECT_EQ(std::stof(cuda::float_literal(0.1f)), 0.1f);
}

TEST(CudaNetworkKernels, AModuleRefusesSharedEntriesAndWrongArgumentCounts) {
  tt::codegen::ElementwiseKernelSpec spec;
  spec.out_shape = {4};
  spec.operand_strides = {{1}};
  spec.program = {{ElementwiseInstr::Op::kRelu, 0}};
  const auto a = cuda::emit_elementwise_kernel(spec, "same");
  auto twice = cuda::compile_module_for_emulation({a, a});
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.error().message.find("both named same"), std::string::npos);
  auto module = cuda::compile_module_for_emulation({a});
  ASSERT_TRUE(module.has_value()) << module.error().message;
  std::vector<float> out(4);
  const tt::Status s = module->launch(0, {out.data()});
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("takes 2 arguments, not 1"), std::string::npos)
      << s.error().message;
}

// A launch split over host threads (each with its own fibers and shared memory) computes what
// one thread does, barriers included, and still reports a divergent barrier.
TEST(CudaNetworkKernels, ALaunchSplitOverThreadsComputesTheSame) {
  cuda::CudaKernelSource k;
  k.entry = "rotate";
  k.grid = {5, 3, 1};
  k.block = {8, 1, 1};
  k.arg_count = 2;
  k.source = R"(extern "C" __global__ void rotate(float* out, const float* data) {
    __shared__ float s[8];
    const int i = (blockIdx.y * gridDim.x + blockIdx.x) * 8 + threadIdx.x;
    s[threadIdx.x] = data[i];
    __syncthreads();
    out[i] = s[(threadIdx.x + 1) % 8] + blockIdx.y;
  })";
  cuda::CudaKernelSource divergent = k;
  divergent.entry = "divergent";
  divergent.source = R"(extern "C" __global__ void divergent(float* out, const float* data) {
    if (blockIdx.x == 4 && threadIdx.x == 2) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
  })";
  auto module = cuda::compile_module_for_emulation({k, divergent});
  ASSERT_TRUE(module.has_value()) << module.error().message;
  std::vector<float> in(120), one(120), two(120);
  for (int i = 0; i < 120; ++i) in[static_cast<size_t>(i)] = static_cast<float>(i);
  tt::ThreadPool pool(2);
  ASSERT_TRUE(module->launch(0, {one.data(), in.data()}).has_value());
  ASSERT_TRUE(module->launch(0, {two.data(), in.data()}, &pool).has_value());
  EXPECT_EQ(one, two);
  for (int i = 0; i < 120; ++i)
    EXPECT_EQ(one[static_cast<size_t>(i)], static_cast<float>((i / 8) * 8 + (i + 1) % 8 + i / 40));
  const tt::Status s = module->launch(1, {one.data(), in.data()}, &pool);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("block (4, "), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("divergent barrier"), std::string::npos) << s.error().message;
}

// Softmax and layer norm rows (one block each): rows shorter than a warp, longer than the block,
// of a transformer's widths, values far apart (exponentials that underflow), against the
// interpreter's loops written out here in double; equal within one float rounding.
TEST(CudaNetworkKernels, SoftmaxAndLayerNormRowsAreTheInterpretersWithinOneRounding) {
  for (int64_t len : {1, 7, 37, 128, 300, 768}) {
    const int64_t rows = 3;
    auto x = random_floats(static_cast<size_t>(rows * len), 5);
    for (size_t i = 0; i < x.size(); i += 3) x[i] *= 30.0f;
    auto scale = random_floats(static_cast<size_t>(len), 6), bias = random_floats(len, 7);
    std::vector<float> soft(x.size()), norm(x.size());
    run_emulated(cuda::emit_softmax_kernel({rows, len}, "softmax"), {soft.data(), x.data()});
    run_emulated(cuda::emit_layer_norm_kernel({rows, len, 1e-5, true}, "layer_norm"),
                 {norm.data(), x.data(), scale.data(), bias.data()});
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x.data() + r * len;
      float m = -std::numeric_limits<float>::infinity();
      double sum = 0, mean = 0, var = 0;
      for (int64_t j = 0; j < len; ++j) m = std::max(m, row[j]);
      for (int64_t j = 0; j < len; ++j) sum += std::exp(double(row[j]) - m);
      for (int64_t j = 0; j < len; ++j) mean += row[j];
      mean /= double(len);
      for (int64_t j = 0; j < len; ++j) var += (row[j] - mean) * (row[j] - mean);
      const double inv = 1.0 / std::sqrt(var / double(len) + 1e-5);
      for (int64_t j = 0; j < len; ++j) {
        const float want_soft = static_cast<float>(std::exp(double(row[j]) - m) / sum);
        const float want_norm = static_cast<float>((row[j] - mean) * inv * scale[j] + bias[j]);
        const float eps = std::numeric_limits<float>::epsilon();
        ASSERT_NEAR(soft[r * len + j], want_soft, std::abs(want_soft) * eps + 1e-30f)
            << "softmax, row of " << len << ", element " << j;
        ASSERT_NEAR(norm[r * len + j], want_norm, std::abs(want_norm) * eps + 1e-9f)
            << "layer norm, row of " << len << ", element " << j;
      }
    }
  }
}

// Transposes (attention's head split and merge, NCHW to NHWC) and slices (a step of 2, a
// negative step) as strided copies: every element where the naive index says.
TEST(CudaNetworkKernels, TransposesAndSlicesCopyWhatTheirIndicesSay) {
  const std::vector<int64_t> shape{2, 3, 4, 5};
  auto x = random_floats(120, 8);
  auto at = [&](int64_t a, int64_t b, int64_t c, int64_t d) {
    return x[static_cast<size_t>(((a * 3 + b) * 4 + c) * 5 + d)];
  };
  const std::vector<int64_t> in_strides{60, 20, 5, 1};
  for (const std::vector<int64_t>& perm : {std::vector<int64_t>{0, 2, 1, 3}, {0, 2, 3, 1}}) {
    std::vector<int64_t> out_shape, strides;
    for (int64_t p : perm) {
      out_shape.push_back(shape[p]);
      strides.push_back(in_strides[p]);
    }
    std::vector<float> got(120);
    run_emulated(cuda::emit_strided_copy_kernel(out_shape, strides, 0, "transpose"),
                 {got.data(), x.data()});
    size_t i = 0;
    for (int64_t a = 0; a < out_shape[0]; ++a)
      for (int64_t b = 0; b < out_shape[1]; ++b)
        for (int64_t c = 0; c < out_shape[2]; ++c)
          for (int64_t d = 0; d < out_shape[3]; ++d, ++i) {
            int64_t in[4];
            const int64_t o[4] = {a, b, c, d};
            for (int k = 0; k < 4; ++k) in[perm[k]] = o[k];
            ASSERT_EQ(got[i], at(in[0], in[1], in[2], in[3])) << "perm " << perm[1] << perm[2];
          }
  }
  // x[:, 1:, ::2, 4:0:-2]: shape (2, 2, 2, 2), from element (0, 1, 0, 4) = 24.
  std::vector<float> got(16);
  run_emulated(cuda::emit_strided_copy_kernel({2, 2, 2, 2}, {60, 20, 10, -2}, 24, "slice"),
               {got.data(), x.data()});
  size_t i = 0;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 1; b < 3; ++b)
      for (int64_t c = 0; c < 4; c += 2)
        for (int64_t d = 4; d > 0; d -= 2, ++i) ASSERT_EQ(got[i], at(a, b, c, d)) << i;
}

#ifdef TT_WITH_CUDA
TEST(CudaNvrtc, NetworkKernelsCompileAndAssembleForSm80) {
  if (auto s = cuda::nvrtc_available(); !s.has_value()) GTEST_SKIP() << s.error().message;
  if (auto p = cuda::ptxas_path(); !p) GTEST_SKIP() << p.error().message;
  tt::codegen::ElementwiseKernelSpec e;
  e.out_shape = {1, 64, 56, 56};
  e.operand_strides = {{200704, 3136, 56, 1}, {0, 1, 0, 0}};
  e.program = {{ElementwiseInstr::Op::kAdd, 0, 1},
               {ElementwiseInstr::Op::kSigmoid, -1},
               {ElementwiseInstr::Op::kClip, -2, 0, 0.0f, 6.0f}};
  tt::codegen::MaxPoolKernelSpec p;
  p.in_shape = {1, 64, 112, 112, 1};
  p.out_h = p.out_w = 56;
  p.kernel_h = p.kernel_w = 3;
  p.stride_h = p.stride_w = 2;
  p.pad_top = p.pad_left = 1;
  tt::codegen::DepthwiseKernelSpec d;
  d.workload = ss::square_conv2d(32, 112, 32, 3, 1);
  d.block = 1;
  d.epilogue = {{tt::epilogue::EpilogueOp::Kind::kClip, -1, 0.0f, 6.0f}};
  for (const cuda::CudaKernelSource& k :
       {cuda::emit_elementwise_kernel(e, "ew"), cuda::emit_max_pool_kernel(p, "pool"),
        cuda::emit_global_avg_pool_kernel({1, 512, 7, 7}, "gap"),
        cuda::emit_depthwise_conv_kernel(d, "dw"), cuda::emit_softmax_kernel({1536, 128}, "soft"),
        cuda::emit_layer_norm_kernel({128, 768, 1e-12, true}, "ln")}) {
    auto compiled = cuda::nvrtc_compile(k, 80, /*cubin=*/false);
    ASSERT_TRUE(compiled.has_value()) << compiled.error().message << "\n" << k.source;
    auto report = cuda::assemble_ptx(compiled->ptx, 80);
    ASSERT_TRUE(report.has_value()) << report.error().message;
    EXPECT_EQ(report->spill_stores, 0) << k.entry << ": " << report->log;
  }
}
#endif

}  // namespace
