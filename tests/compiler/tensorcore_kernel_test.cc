// The tensor-core templates: the precisions' rounding against independent definitions, the
// CPU emulation of mma.sync against a reference with the same input rounding and a derived
// bound on float32 accumulation, and (with the CUDA Toolkit) NVRTC + ptxas for sm_80 and sm_90.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/cuda/emulator.h"
#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/tensorcore_gemm_template.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/nvrtc.h"
#endif

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
namespace cuda = tensortune::codegen::cuda;
using tt::Tensor;

namespace {

constexpr ss::Precision kReduced[] = {ss::Precision::kTf32, ss::Precision::kFloat16,
                                      ss::Precision::kBFloat16, ss::Precision::k3xTf32};

// Round to nearest with `bits` significant bits, by arithmetic on the value (not its encoding):
// ties away from zero (TF32's cvt.rna) or to even (float16's and bfloat16's cvt.rn). Normal
// range only: the callers keep to it.
double round_significand(double x, int bits, bool ties_away) {
  if (x == 0) return x;
  int e = 0;
  std::frexp(x, &e);  // |x| = m 2^e, m in [0.5, 1)
  const double scaled = std::ldexp(x, bits - e);
  return std::ldexp(ties_away ? std::round(scaled) : std::nearbyint(scaled), e - bits);
}

TEST(ReducedPrecision, RoundingMatchesIndependentDefinitions) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-12, 14);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::ldexp(mantissa(gen), exponent(gen)) * (i % 2 ? -1.0f : 1.0f);
    EXPECT_EQ(ss::round_to_precision(x, ss::Precision::kTf32), round_significand(x, 11, true)) << x;
    EXPECT_EQ(ss::round_to_precision(x, ss::Precision::kBFloat16), round_significand(x, 8, false))
        << x;
    EXPECT_EQ(ss::round_to_precision(x, ss::Precision::kFloat16),
              static_cast<float>(static_cast<_Float16>(x)))
        << x;
    EXPECT_EQ(ss::round_to_precision(x, ss::Precision::kFloat32), x);
  }
  // Ties: TF32 away from zero, the 16-bit formats to even.
  const float tie11 = 1.0f + std::ldexp(1.0f, -11), tie8 = 1.0f + std::ldexp(1.0f, -8);
  EXPECT_EQ(ss::round_to_precision(tie11, ss::Precision::kTf32), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(ss::round_to_precision(-tie11, ss::Precision::kTf32), -1.0f - std::ldexp(1.0f, -10));
  EXPECT_EQ(ss::round_to_precision(tie11, ss::Precision::kFloat16), 1.0f);
  EXPECT_EQ(ss::round_to_precision(tie8, ss::Precision::kBFloat16), 1.0f);
  // float16's range: subnormals, overflow past 65504 + half an ulp; infinities stay.
  for (float x : {65504.0f, 65519.0f, 65520.0f, 1e6f, 3e-5f, 6e-8f, 2.9e-8f, 1e-9f, -0.0f})
    EXPECT_EQ(ss::round_to_precision(x, ss::Precision::kFloat16),
              static_cast<float>(static_cast<_Float16>(x)))
        << x;
  EXPECT_TRUE(std::isinf(ss::round_to_precision(INFINITY, ss::Precision::kTf32)));
  EXPECT_TRUE(std::isnan(ss::round_to_precision(NAN, ss::Precision::kBFloat16)));
  EXPECT_TRUE(std::isnan(ss::round_to_precision(NAN, ss::Precision::kFloat16)));
}

TEST(ReducedPrecision, NamesParseAndKeepTheirTasksApart) {
  EXPECT_EQ(*ss::parse_float_precision("tf32"), ss::Precision::kTf32);
  EXPECT_EQ(*ss::parse_float_precision("fp16"), ss::Precision::kFloat16);
  EXPECT_EQ(*ss::parse_float_precision("bfloat16"), ss::Precision::kBFloat16);
  EXPECT_EQ(*ss::parse_float_precision("3xtf32"), ss::Precision::k3xTf32);
  auto bad = ss::parse_float_precision("fp8");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("'fp8'"), std::string::npos) << bad.error().message;
  const ss::Target gpu{ss::cuda_target_spec(80), 1};
  auto f16 = ss::make_task("dense_tensorcore.cuda",
                           ss::DenseWorkload{64, 32, 48, ss::Precision::kFloat16}, gpu);
  auto tf32 = ss::make_task("dense_tensorcore.cuda",
                            ss::DenseWorkload{64, 32, 48, ss::Precision::kTf32}, gpu);
  ASSERT_TRUE(f16.has_value()) << f16.error().message;
  ASSERT_TRUE(tf32.has_value()) << tf32.error().message;
  EXPECT_NE(ss::workload_key(*f16), ss::workload_key(*tf32));
  EXPECT_NE(ss::workload_key(*f16).find("\"float16\""), std::string::npos);
  auto split = ss::make_task("dense_tensorcore.cuda",
                             ss::DenseWorkload{64, 32, 48, ss::Precision::k3xTf32}, gpu);
  ASSERT_TRUE(split.has_value()) << split.error().message;
  EXPECT_NE(ss::workload_key(*split), ss::workload_key(*tf32));
  EXPECT_NE(ss::workload_key(*split).find("\"3xtf32\""), std::string::npos);
  // A float32 workload is not the tensor-core template's; float16 is not the FP32 templates'.
  auto fp32 = ss::make_task("dense_tensorcore.cuda", ss::DenseWorkload{64, 32, 48}, gpu);
  ASSERT_FALSE(fp32.has_value());
  EXPECT_NE(fp32.error().message.find("float32"), std::string::npos) << fp32.error().message;
  EXPECT_FALSE(ss::make_task("dense_large_batch.gpu",
                             ss::DenseWorkload{64, 32, 48, ss::Precision::kFloat16}, gpu)
                   .has_value());
  // Tensor cores need sm_80.
  auto old =
      ss::make_task("dense_tensorcore.cuda", ss::DenseWorkload{64, 32, 48, ss::Precision::kFloat16},
                    ss::Target{ss::cuda_target_spec(75), 1});
  ASSERT_FALSE(old.has_value());
  EXPECT_NE(old.error().message.find("sm_75"), std::string::npos) << old.error().message;
}

// AutoTVM's float16 space: 15552 points times our `stages` knob, AutoTVM's index formula (the
// first knob fastest; its configs are stages 1), wmma_m's candidates by the shape's
// divisibility.
TEST(DenseTensorcore, SpaceHasAutoTvmsKnobsAndIndices) {
  const ss::Target gpu{ss::cuda_target_spec(80), 1};
  auto task = ss::make_task("dense_tensorcore.cuda",
                            ss::DenseWorkload{64, 256, 128, ss::Precision::kFloat16}, gpu);
  ASSERT_TRUE(task.has_value());
  auto space = ss::make_config_space(*task);
  ASSERT_TRUE(space.has_value());
  EXPECT_EQ(space->size(), 15552 * 3);
  const std::vector<std::string> names{
      "block_row_warps", "block_col_warps", "warp_row_tiles", "warp_col_tiles",
      "chunk",           "offset",          "offsetCS",       "vec",
      "wmma_m",          "stages"};
  ASSERT_EQ(space->knobs().size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(space->knobs()[i].name, names[i]);
  // brw 2 (digit 1), bcw 4 (2), chunk 4 (2), vec 8 (3), wmma_m: M % 32 = 0 -> [32, 16, 8], 16.
  const int64_t index = 1 + 3 * 2 + 81 * 2 + 1296 * 3 + 5184 * 1;
  auto c = space->config_at(index);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(std::get<int64_t>(space->value(*c, "block_row_warps")), 2);
  EXPECT_EQ(std::get<int64_t>(space->value(*c, "block_col_warps")), 4);
  EXPECT_EQ(std::get<int64_t>(space->value(*c, "chunk")), 4);
  EXPECT_EQ(std::get<int64_t>(space->value(*c, "vec")), 8);
  EXPECT_EQ(std::get<int64_t>(space->value(*c, "wmma_m")), 16);
  // tf32: no wmma_m.
  auto tf32 = ss::make_task("dense_tensorcore.cuda",
                            ss::DenseWorkload{64, 256, 128, ss::Precision::kTf32}, gpu);
  EXPECT_EQ(std::get<int64_t>(space->value(*c, "stages")), 1);
  EXPECT_EQ(ss::make_config_space(*tf32)->size(), 5184 * 3);
}

// `count` valid configs spread over the space, the default first: from each of count - 1 evenly
// spaced indices, the first valid one at or after it.
std::vector<ss::Config> sample(const ss::Task& task, const ss::ConfigSpace& space, int count) {
  std::vector<ss::Config> out{ss::default_config(task, space)};
  for (int s = 1; s < count; ++s)
    for (int64_t i = space.size() * s / count; i < space.size(); ++i)
      if (space.is_valid_index(i)) {
        out.push_back(*space.config_at(i));
        break;
      }
  return out;
}

// |computed - exact| for a sum of K products computed in float32 in any order, from exact
// products of rounded inputs: at most gamma(K + 1) sum |products| (+ |bias|), gamma(n) =
// n u / (1 - n u), u = 2^-24 (Higham, Accuracy and Stability, 3.1), K the workload's reduction
// length. The reference is that sum in double, rounded once to float (half an ulp more);
// sum |products| is the float32 reference of the rounded inputs' magnitudes (1e-6 of slack for
// its own rounding). 3xtf32 sums three products per term (3K + 1 additions), and each term is
// within input_unit_roundoff of the exact product of unrounded inputs (its reference's).
void expect_within_accumulation_bound(const ss::Workload& w, const tt::measure::OperatorInputs& in,
                                      const Tensor& got, const std::string& what) {
  const ss::Precision p = ss::precision_of(w);
  const Tensor want = tt::measure::reference_output(w, in.data, in.weight, &*in.bias);
  auto magnitudes = [p](Tensor t) {
    for (float& v : t.f32) v = std::fabs(ss::round_to_precision(v, p));
    return t;
  };
  ss::Workload exact = w;
  std::visit([](auto& x) { x.precision = ss::Precision::kFloat32; }, exact);
  Tensor bias = *in.bias;
  for (float& v : bias.f32) v = std::fabs(v);
  const Tensor magnitude =
      tt::measure::reference_output(exact, magnitudes(in.data), magnitudes(in.weight), &bias);
  const bool split = p == ss::Precision::k3xTf32;
  const double u = std::ldexp(1.0, -24), n = double((split ? 3 : 1) * ss::reduction_length(w) + 1);
  const double gamma = n * u / (1 - n * u) + (split ? ss::input_unit_roundoff(p) : 0.0);
  ASSERT_EQ(got.f32.size(), want.f32.size());
  for (size_t i = 0; i < want.f32.size(); ++i)
    ASSERT_LE(std::fabs(double(got.f32[i]) - want.f32[i]),
              gamma * magnitude.f32[i] * (1 + 1e-6) + u * std::fabs(want.f32[i]))
        << what << " element " << i << ": " << got.f32[i] << " vs " << want.f32[i];
}

// Uniform inputs of the workload's operand shapes, from three consecutive seeds.
tt::measure::OperatorInputs random_inputs(const ss::Workload& w, uint64_t seed) {
  const ss::OperandShapes shapes = ss::operand_shapes(w);
  tt::measure::OperatorInputs in{Tensor::zeros(shapes.data), Tensor::zeros(shapes.weight),
                                 Tensor::zeros(shapes.bias)};
  tt::fill_uniform(in.data, seed);
  tt::fill_uniform(in.weight, seed + 1);
  tt::fill_uniform(*in.bias, seed + 2);
  return in;
}

// Each config emulated on the inputs, within the accumulation bound.
void expect_emulated_within_bound(const ss::Task& task, const ss::ConfigSpace& space,
                                  const std::vector<ss::Config>& configs,
                                  const tt::measure::OperatorInputs& in) {
  for (const ss::Config& c : configs) {
    auto got = tt::measure::run_operator(task, space, c, in, 1);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    expect_within_accumulation_bound(
        task.workload, in, *got,
        std::string(ss::precision_name(ss::precision_of(task.workload))) + " " +
            ss::describe_workload(task.workload) + " " + space.describe(c));
  }
}

// Shapes with edges in every direction (M, N not multiples of any tile; K a multiple of 8 only),
// sampled configs of every precision, with a bias (relu would hide the signs of errors).
TEST(DenseTensorcore, EmulatedKernelsEqualTheRoundedReference) {
  const ss::Target gpu{ss::cuda_target_spec(80), 1};
  for (ss::Precision p : kReduced)
    for (const ss::DenseWorkload base :
         {ss::DenseWorkload{37, 45, 40}, ss::DenseWorkload{64, 32, 96}}) {
      ss::DenseWorkload w = base;
      w.precision = p;
      auto task = ss::make_task("dense_tensorcore.cuda", w, gpu);
      ASSERT_TRUE(task.has_value()) << task.error().message;
      auto space = ss::make_config_space(*task);
      ASSERT_TRUE(space.has_value());
      const auto configs = sample(*task, *space, 4);
      EXPECT_GE(configs.size(), 3u);
      expect_emulated_within_bound(*task, *space, configs, random_inputs(w, 41));
    }
}

// Inputs at a rounding tie, so that the kernel's results are exact and say which rounding the
// inputs took: TF32 rounds 1 + 2^-11 away from zero to 1 + 2^-10, float16 to even (1), and
// bfloat16 1 + 2^-8 to 1. Every product is then a small exact value and so is every sum.
TEST(DenseTensorcore, EmulatedInputsRoundAsTheHardwareRounds) {
  const ss::Target gpu{ss::cuda_target_spec(80), 1};
  for (ss::Precision p : kReduced) {
    const ss::DenseWorkload w{32, 16, 32, p};
    auto task = ss::make_task("dense_tensorcore.cuda", w, gpu);
    ASSERT_TRUE(task.has_value());
    auto space = ss::make_config_space(*task);
    const float tie =
        p == ss::Precision::kBFloat16 ? 1.0f + std::ldexp(1.0f, -8) : 1.0f + std::ldexp(1.0f, -11);
    // 3xtf32 splits the tie into 1 + 2^-10 and -2^-11: their products sum to the tie's exactly.
    const float rounded = p == ss::Precision::kTf32     ? 1.0f + std::ldexp(1.0f, -10)
                          : p == ss::Precision::k3xTf32 ? tie
                                                        : 1.0f;
    tt::measure::OperatorInputs in{Tensor::zeros({w.batch, w.in_features}),
                                   Tensor::zeros({w.out_features, w.in_features}),
                                   Tensor::zeros({w.out_features})};
    // data[m][k] = tie for k < m (else 0); weight[n][k] = n + 1 for every k: out = min(m, K)
    // rounded values times (n + 1).
    for (int64_t m = 0; m < w.batch; ++m)
      for (int64_t k = 0; k < std::min(m, w.in_features); ++k)
        in.data.f32[m * w.in_features + k] = tie;
    for (int64_t n = 0; n < w.out_features; ++n)
      for (int64_t k = 0; k < w.in_features; ++k)
        in.weight.f32[n * w.in_features + k] = float(n + 1);
    for (const ss::Config& c : sample(*task, *space, 3)) {
      auto got = tt::measure::run_operator(*task, *space, c, in, 1);
      ASSERT_TRUE(got.has_value()) << got.error().message;
      for (int64_t m = 0; m < w.batch; ++m)
        for (int64_t n = 0; n < w.out_features; ++n)
          ASSERT_EQ(got->f32[m * w.out_features + n],
                    float(std::min(m, w.in_features)) * rounded * float(n + 1))
              << ss::precision_name(p) << " " << space->describe(c) << " (" << m << ", " << n
              << ")";
    }
  }
}

// What 3xtf32 is for: float32's accuracy from TF32 instructions. Against a double-precision
// sum of the unrounded inputs over a long reduction, its worst error is well below tf32's (64x:
// tf32's inputs move by 2^-11, 3xtf32's terms by ~2^-22) and within 4x of a float32 loop's
// (which sums K products where 3xtf32 sums 3K: sqrt(3) more rounding noise).
TEST(DenseTensorcore, ThreeTf32HasFloat32sAccuracy) {
  const ss::Target gpu{ss::cuda_target_spec(80), 1};
  const int64_t M = 19, N = 24, K = 512;
  tt::measure::OperatorInputs in{Tensor::zeros({M, K}), Tensor::zeros({N, K}), Tensor::zeros({N})};
  tt::fill_uniform(in.data, 81);
  tt::fill_uniform(in.weight, 82);
  std::vector<double> exact(static_cast<size_t>(M * N));
  Tensor loop = Tensor::zeros({M, N});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double sum = 0;
      float sum32 = 0;
      for (int64_t k = 0; k < K; ++k) {
        sum += double(in.data.f32[m * K + k]) * double(in.weight.f32[n * K + k]);
        sum32 = std::fma(in.data.f32[m * K + k], in.weight.f32[n * K + k], sum32);
      }
      exact[m * N + n] = sum;
      loop.f32[m * N + n] = sum32;
    }
  auto worst = [&](const Tensor& t) {
    double e = 0;
    for (size_t i = 0; i < exact.size(); ++i) e = std::max(e, std::fabs(t.f32[i] - exact[i]));
    return e;
  };
  std::map<ss::Precision, double> error;
  for (ss::Precision p : {ss::Precision::kTf32, ss::Precision::k3xTf32}) {
    auto task = ss::make_task("dense_tensorcore.cuda", ss::DenseWorkload{M, N, K, p}, gpu);
    ASSERT_TRUE(task.has_value()) << task.error().message;
    auto space = ss::make_config_space(*task);
    auto got = tt::measure::run_operator(*task, *space, ss::default_config(*task, *space), in, 1);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    error[p] = worst(*got);
  }
  const double split = error[ss::Precision::k3xTf32], tf32 = error[ss::Precision::kTf32];
  EXPECT_LT(split * 64, tf32) << "3xtf32 " << split << ", tf32 " << tf32;
  EXPECT_LE(split, 4 * worst(loop)) << "3xtf32 " << split << ", float32 loop " << worst(loop);
}

// The cp.async ring (stages 2 and 3) computes what the synchronous staging does: the same
// configs with each stage count, every precision, edges in M and N and a K of several steps.
TEST(DenseTensorcore, PipelinedStagesEqualTheRoundedReference) {
  const ss::Target gpu{ss::cuda_target_spec(80), 1};
  for (ss::Precision p : kReduced) {
    const ss::DenseWorkload w{37, 45, 96, p};
    auto task = ss::make_task("dense_tensorcore.cuda", w, gpu);
    ASSERT_TRUE(task.has_value());
    auto space = ss::make_config_space(*task);
    const tt::measure::OperatorInputs in = random_inputs(w, 71);
    int pipelined = 0;
    for (const ss::Config& base : sample(*task, *space, 3)) {
      for (int32_t stages : {1, 2}) {  // digits: 2 and 3 stages
        std::vector<int32_t> digits = base.digits;
        digits.back() = stages;
        auto c = space->config_from_digits(digits);
        ASSERT_TRUE(c.has_value());
        if (!space->is_valid(*c)) continue;  // three stages may not fit 48 KiB
        ++pipelined;
        expect_emulated_within_bound(*task, *space, {*c}, in);
      }
    }
    EXPECT_GE(pipelined, 3);
  }
}

// The valid configs of a space whose staged tiles need more than a static array's 48 KiB, the
// deepest pipelines first.
std::vector<ss::Config> dynamic_shared_configs(const ss::Task& task, const ss::ConfigSpace& space,
                                               size_t count) {
  const ss::GemmExtents e = ss::gemm_extents(task.workload);
  std::vector<ss::Config> out;
  for (int64_t stages : {3, 2, 1})
    for (int64_t i = 0; i < space.size() && out.size() < count; ++i) {
      if (!space.is_valid_index(i)) continue;
      const ss::Config c = *space.config_at(i);
      const ss::TensorcoreSchedule s = ss::tensorcore_schedule(e, space, c);
      if (s.stages == stages && s.dynamic_shared()) out.push_back(c);
    }
  return out;
}

// Beyond 48 KiB the staged tiles are dynamic shared memory, valid up to what the target's
// architecture lets a block opt into: configs of 100-163 KiB are valid for sm_80 and not for
// sm_86 (99 KiB); the kernel declares its buffer extern and the launch asks for its bytes.
TEST(DenseTensorcore, TilesBeyondFortyEightKiBAreDynamicSharedMemoryWithinTheArchsLimit) {
  const ss::DenseWorkload w{256, 256, 512, ss::Precision::kTf32};
  std::map<int, int64_t> largest;
  for (int cc : {80, 86, 90}) {
    auto task = ss::make_task("dense_tensorcore.cuda", w, ss::Target{ss::cuda_target_spec(cc), 1});
    ASSERT_TRUE(task.has_value()) << task.error().message;
    auto space = ss::make_config_space(*task);
    const ss::GemmExtents e = ss::gemm_extents(task->workload);
    for (int64_t i = 0; i < space->size(); ++i)
      if (space->is_valid_index(i))
        largest[cc] = std::max(
            largest[cc], ss::tensorcore_schedule(e, *space, *space->config_at(i)).shared_bytes());
  }
  EXPECT_GT(largest[80], 99 * 1024);
  EXPECT_LE(largest[80], 163 * 1024);
  EXPECT_LE(largest[86], 99 * 1024);
  EXPECT_GT(largest[86], 48 * 1024);
  EXPECT_GT(largest[90], largest[80]);
  EXPECT_LE(largest[90], 227 * 1024);

  const ss::Target gpu{ss::cuda_target_spec(90), 1};
  auto task = ss::make_task("dense_tensorcore.cuda", w, gpu);
  auto space = ss::make_config_space(*task);
  const auto configs = dynamic_shared_configs(*task, *space, 1);
  ASSERT_FALSE(configs.empty());
  auto k = cuda::emit_cuda_kernel(*task, *space, configs[0], cuda::CudaKernelOptions{});
  ASSERT_TRUE(k.has_value()) << k.error().message;
  EXPECT_EQ(k->shared_bytes, 0);
  EXPECT_GT(k->dynamic_shared_bytes, 48 * 1024);
  EXPECT_NE(k->source.find("TT_DYNAMIC_SHARED(float4, smem"), std::string::npos);
  EXPECT_TRUE(ss::check_gpu_limits(k->usage(), ss::limits_for_capability(90)).has_value());
  EXPECT_FALSE(ss::check_gpu_limits(k->usage(), ss::kUniversalGpuLimits).has_value());
}

// A kernel of dynamic shared memory (a 3-stage ring of large tiles) computes what the static ones
// do, emulated; every precision.
TEST(DenseTensorcore, DynamicSharedMemoryKernelsEqualTheRoundedReference) {
  const ss::Target gpu{ss::cuda_target_spec(90), 1};
  for (ss::Precision p : kReduced) {
    const ss::DenseWorkload w{130, 136, 256, p};
    auto task = ss::make_task("dense_tensorcore.cuda", w, gpu);
    ASSERT_TRUE(task.has_value()) << task.error().message;
    auto space = ss::make_config_space(*task);
    const auto configs = dynamic_shared_configs(*task, *space, 1);
    ASSERT_FALSE(configs.empty()) << ss::precision_name(p);
    expect_emulated_within_bound(*task, *space, configs, random_inputs(w, 91));
  }
}

// The emulation's cp.async: the copy lands at the wait that completes its group (before it the
// destination holds what it held), bytes past `valid` are zeros, and a wait keeps the newest
// groups in flight.
TEST(CudaEmulation, CpAsyncLandsAtItsWaitGroup) {
  cuda::CudaKernelSource k;
  k.entry = "copies";
  k.block = {1, 1, 1};
  k.source = R"(extern "C" __global__ void copies(const float* data, const float* weight,
                                         float* out) {
    __shared__ float s[8];
    for (int i = 0; i < 8; ++i) s[i] = -1.0f;
    tt_cp_async<16>(s, data, 16);        // group 0
    tt_cp_async_commit();
    tt_cp_async<8>(s + 4, data + 4, 4);  // group 1: one float, then a zero
    tt_cp_async_commit();
    out[0] = s[0];                       // nothing has landed
    tt_cp_async_wait<1>();               // group 0 only
    out[1] = s[3];
    out[2] = s[4];
    tt_cp_async_wait<0>();
    out[3] = s[4];
    out[4] = s[5];
    __syncthreads();
  })";
  auto kernel = cuda::compile_for_emulation(k);
  ASSERT_TRUE(kernel.has_value()) << kernel.error().message;
  const std::vector<float> in{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> out(5, 0.0f);
  ASSERT_TRUE(kernel->launch(in.data(), nullptr, out.data()).has_value());
  EXPECT_EQ(out, (std::vector<float>{-1, 4, -1, 5, 0}));
}

// Batch matmul of both weight layouts ([B, N, K] and [B, K, N]), three batch entries
// (blockIdx.z), edges in M and N, every precision, a bias per column.
TEST(BatchMatmulTensorcore, EmulatedKernelsEqualTheRoundedReference) {
  const ss::Target gpu{ss::cuda_target_spec(80), 1};
  for (ss::Precision p : kReduced)
    for (bool transpose_b : {true, false}) {
      const ss::BatchMatmulWorkload w{3, 37, 24, 32, transpose_b, p};
      auto task = ss::make_task("batch_matmul_tensorcore.cuda", w, gpu);
      ASSERT_TRUE(task.has_value()) << task.error().message;
      auto space = ss::make_config_space(*task);
      ASSERT_TRUE(space.has_value());
      expect_emulated_within_bound(*task, *space, sample(*task, *space, 3), random_inputs(w, 51));
    }
}

// The convolution as an implicit GEMM: two images, stride (2, 1), dilation (1, 2), pads t1 l0
// b2 r1, a 3x2 kernel, and a 1x1 one; every precision; a bias per output channel.
TEST(Conv2dNchwTensorcore, EmulatedKernelsEqualTheRoundedReference) {
  const ss::Target gpu{ss::cuda_target_spec(80), 1};
  for (ss::Precision p : kReduced)
    for (auto base :
         {*ss::conv2d_workload({2, 6, 9, 11}, {20, 6, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}),
          ss::square_conv2d(16, 6, 24, 1, 1)}) {
      ss::Conv2dWorkload w = base;
      w.precision = p;
      auto task = ss::make_task("conv2d_nchw_tensorcore.cuda", w, gpu);
      ASSERT_TRUE(task.has_value()) << task.error().message;
      auto space = ss::make_config_space(*task);
      ASSERT_TRUE(space.has_value());
      expect_emulated_within_bound(*task, *space, sample(*task, *space, 3), random_inputs(w, 61));
    }
}

#ifdef TT_WITH_CUDA
// ptxas for sm_80 and sm_90: the shared memory the launch asks for, no spills, the limits.
void assemble_within_limits(const cuda::CudaKernelSource& k, const std::string& ptx,
                            const std::string& what, std::vector<int> archs = {80, 90}) {
  for (int cc : archs) {
    auto report = cuda::assemble_ptx(ptx, cc);
    ASSERT_TRUE(report.has_value()) << report.error().message;
    EXPECT_EQ(report->shared_bytes, k.shared_bytes) << what;
    EXPECT_EQ(report->spill_stores + report->spill_loads, 0)
        << what << " sm_" << cc << ": " << report->log;
    ss::GpuKernelUsage usage = k.usage();
    usage.registers_per_thread = report->registers;
    EXPECT_TRUE(ss::check_gpu_limits(usage, ss::limits_for_capability(cc)).has_value())
        << what << " sm_" << cc << ": " << report->log;
  }
}

// Sampled configs of BERT-sized and odd shapes through NVRTC to PTX, assembled for sm_80 and
// sm_90 within the limits, without spills.
TEST(DenseTensorcore, SampledConfigsCompileAndAssembleWithinTheLimits) {
  if (auto s = cuda::nvrtc_available(); !s.has_value()) GTEST_SKIP() << s.error().message;
  if (auto p = cuda::ptxas_path(); !p) GTEST_SKIP() << p.error().message;
  const ss::Target gpu{ss::cuda_target_spec(80), 1};
  for (ss::Precision p : kReduced)
    for (const ss::DenseWorkload base :
         {ss::DenseWorkload{128, 768, 768}, ss::DenseWorkload{1, 1000, 2048},
          ss::DenseWorkload{37, 45, 40}}) {
      ss::DenseWorkload w = base;
      w.precision = p;
      auto task = ss::make_task("dense_tensorcore.cuda", w, gpu);
      ASSERT_TRUE(task.has_value());
      auto space = ss::make_config_space(*task);
      for (const ss::Config& c : sample(*task, *space, 6)) {
        auto k = cuda::emit_cuda_kernel(*task, *space, c,
                                        cuda::CudaKernelOptions::bias_relu(true, true));
        ASSERT_TRUE(k.has_value()) << k.error().message;
        auto compiled = cuda::nvrtc_compile(*k, 80, /*cubin=*/false);
        ASSERT_TRUE(compiled.has_value()) << compiled.error().message << "\n" << k->source;
        EXPECT_NE(compiled->ptx.find("mma.sync.aligned"), std::string::npos);
        assemble_within_limits(*k, compiled->ptx, space->describe(c));
      }
    }
  // Dynamic shared memory: ptxas sees no static array; the launch's bytes are within sm_90's.
  for (ss::Precision p : kReduced) {
    const ss::Target sm90{ss::cuda_target_spec(90), 1};
    auto task = ss::make_task("dense_tensorcore.cuda", ss::DenseWorkload{256, 256, 512, p}, sm90);
    ASSERT_TRUE(task.has_value());
    auto space = ss::make_config_space(*task);
    for (const ss::Config& c : dynamic_shared_configs(*task, *space, 2)) {
      auto k =
          cuda::emit_cuda_kernel(*task, *space, c, cuda::CudaKernelOptions::bias_relu(true, true));
      ASSERT_TRUE(k.has_value()) << k.error().message;
      auto compiled = cuda::nvrtc_compile(*k, 90, /*cubin=*/false);
      ASSERT_TRUE(compiled.has_value()) << compiled.error().message << "\n" << k->source;
      assemble_within_limits(*k, compiled->ptx, space->describe(c), {90});
    }
  }
  // ResNet-50's convolutions: a 3x3 stride-1, a strided 1x1, the 7x7 stem.
  for (ss::Precision p : kReduced)
    for (ss::Conv2dWorkload w :
         {ss::square_conv2d(64, 56, 64, 3, 1), ss::square_conv2d(256, 28, 512, 1, 2),
          *ss::conv2d_workload({1, 3, 224, 224}, {64, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1})}) {
      w.precision = p;
      auto task = ss::make_task("conv2d_nchw_tensorcore.cuda", w, gpu);
      ASSERT_TRUE(task.has_value()) << task.error().message;
      auto space = ss::make_config_space(*task);
      for (const ss::Config& c : sample(*task, *space, 4)) {
        auto k = cuda::emit_cuda_kernel(*task, *space, c,
                                        cuda::CudaKernelOptions::bias_relu(true, true));
        ASSERT_TRUE(k.has_value()) << k.error().message;
        auto compiled = cuda::nvrtc_compile(*k, 80, /*cubin=*/false);
        ASSERT_TRUE(compiled.has_value()) << compiled.error().message << "\n" << k->source;
        assemble_within_limits(*k, compiled->ptx, space->describe(c));
      }
    }
  // BERT-base's attention: Q K^T ([B, N, K]) and the product with V ([B, K, N]).
  for (ss::Precision p : kReduced)
    for (const ss::BatchMatmulWorkload base : {ss::BatchMatmulWorkload{12, 128, 128, 64, true},
                                               ss::BatchMatmulWorkload{12, 128, 64, 128, false}}) {
      ss::BatchMatmulWorkload w = base;
      w.precision = p;
      auto task = ss::make_task("batch_matmul_tensorcore.cuda", w, gpu);
      ASSERT_TRUE(task.has_value());
      auto space = ss::make_config_space(*task);
      for (const ss::Config& c : sample(*task, *space, 6)) {
        auto k = cuda::emit_cuda_kernel(*task, *space, c,
                                        cuda::CudaKernelOptions::bias_relu(true, false));
        ASSERT_TRUE(k.has_value()) << k.error().message;
        auto compiled = cuda::nvrtc_compile(*k, 80, /*cubin=*/false);
        ASSERT_TRUE(compiled.has_value()) << compiled.error().message << "\n" << k->source;
        assemble_within_limits(*k, compiled->ptx, space->describe(c));
      }
    }
}
#endif

}  // namespace
