#include "schedule_space/tensorcore_gemm_template.h"

#include <numeric>

#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::log_feature;
using util::option_index;
using util::preferred_or_first_valid;

// The knobs' positions (AutoTVM's order).
enum KnobPosition {
  kBlockRowWarps,
  kBlockColWarps,
  kWarpRowTiles,
  kWarpColTiles,
  kChunk,
  kOffset,
  kOffsetCs,
  kVec,
  kWmmaM,  // float16 and bfloat16 only; `stages` is the last knob
};

Knob ints_knob(const char* name, std::vector<int64_t> values) {
  std::vector<KnobValue> options(values.begin(), values.end());
  return make_other_knob(name, std::move(options));
}

int64_t int_value(const std::vector<Knob>& knobs, const std::vector<int32_t>& d, int position) {
  return std::get<int64_t>(knobs[position].options[d[position]]);
}

// AutoTVM's wmma_m candidates: the first fragment form the shape divides, its own first.
std::vector<int64_t> wmma_m_candidates(const GemmExtents& e) {
  if (e.m % 32 == 0 && e.n % 8 == 0) return {32, 16, 8};
  if (e.m % 16 == 0 && e.n % 16 == 0) return {16, 8, 32};
  if (e.m % 8 == 0 && e.n % 32 == 0) return {8, 16, 32};
  return {16, 32, 8};  // guarded edges: any form computes it; the square one first
}

TensorcoreSchedule decode(const GemmExtents& e, const std::vector<Knob>& knobs,
                          const std::vector<int32_t>& d) {
  TensorcoreSchedule s;
  s.precision = e.precision;
  s.block_row_warps = int_value(knobs, d, kBlockRowWarps);
  s.block_col_warps = int_value(knobs, d, kBlockColWarps);
  s.warp_row_tiles = int_value(knobs, d, kWarpRowTiles);
  s.warp_col_tiles = int_value(knobs, d, kWarpColTiles);
  s.chunk = int_value(knobs, d, kChunk);
  s.offset = int_value(knobs, d, kOffset);
  s.offset_cs = int_value(knobs, d, kOffsetCs);
  s.vec = int_value(knobs, d, kVec);
  if (uses_tf32_mma(e.precision)) {
    s.wmma_m = 16, s.wmma_n = 16, s.wmma_k = 8;
  } else {
    s.wmma_m = int_value(knobs, d, kWmmaM);
    s.wmma_n = 256 / s.wmma_m;  // (16, 16), (32, 8), (8, 32)
    s.wmma_k = 16;
  }
  s.stages = int_value(knobs, d, static_cast<int>(knobs.size()) - 1);
  return s;
}

bool valid(const GemmExtents& e, const TensorcoreSchedule& s, const GpuLimits& limits) {
  // Vector loads walk K (data, and a weight of [N, K]) or N (a weight of [K, N]); a
  // convolution's patches are gathered one element at a time.
  if (e.k % s.vec != 0 || s.tile_k() % s.vec != 0) return false;
  // A pipeline copies a [K, N] weight one float at a time (vec is for the rows it copies).
  if (e.weight_kn && !s.pipelined() && (e.n % s.vec != 0 || s.tile_n() % s.vec != 0)) return false;
  if (s.wmma_m % s.mma().m != 0 || s.wmma_n % s.mma().n != 0) return false;
  const auto grid = s.grid(e);
  const int64_t bytes = s.shared_bytes();
  return fits_limits(launch_usage({s.threads(), 1, 1}, grid, s.dynamic_shared() ? 0 : bytes,
                                  s.dynamic_shared() ? bytes : 0),
                     s.accumulators(), limits);
}

// What the two templates share; they differ in name, operator and operand shapes.
class TensorcoreGemmTemplate : public Template {
 public:
  std::string_view backend() const override { return "cuda"; }
  Precision precision() const override { return Precision::kFloat16; }
  bool computes(Precision p) const override { return is_reduced_float(p); }
  Status accepts(const Workload&) const override { return ok_status(); }
  Status accepts_target(const Target& target) const override {
    auto cc = cuda_compute_capability(target.spec);
    if (!cc) return cc.error();
    if (*cc < 80)
      return invalid_argument(std::string(name()) +
                              " runs on the tensor cores of sm_80 or newer; the target is '" +
                              target.spec + "'");
    return ok_status();
  }
  ConfigSpace config_space(const Task& task) const override {
    // accepts_target has checked the target; a spec without an arch keeps the universal limits.
    auto cc = cuda_compute_capability(task.target.spec);
    return tensorcore_space(std::string(name()), gemm_extents(task.workload),
                            cc ? limits_for_capability(*cc) : kUniversalGpuLimits);
  }
  // AutoTVM falls back to every knob's first candidate (a one-warp 16 x 16 tile); ours is a
  // 2 x 2 warp block of 2 x 2 tiles, two fragment steps of K per stage, padded rows and
  // float4 loads where the space has them, else the first valid config.
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const GemmExtents e = gemm_extents(task.workload);
    const auto& knobs = space.knobs();
    const int64_t vec =
        util::largest_power_of_two_divisor_at_most(e.weight_kn ? std::gcd(e.k, e.n) : e.k, 4);
    std::vector<int32_t> digits{
        option_index(knobs[kBlockRowWarps], int64_t{2}),
        option_index(knobs[kBlockColWarps], int64_t{2}),
        option_index(knobs[kWarpRowTiles], int64_t{2}),
        option_index(knobs[kWarpColTiles], int64_t{2}),
        option_index(knobs[kChunk], int64_t{2}),
        option_index(knobs[kOffset], uses_tf32_mma(e.precision) ? int64_t{4} : int64_t{8}),
        option_index(knobs[kOffsetCs], int64_t{0}),
        option_index(knobs[kVec], vec),
    };
    if (!uses_tf32_mma(e.precision)) digits.push_back(option_index(knobs[kWmmaM], int64_t{16}));
    digits.push_back(0);  // stages 1: the pipeline has not yet run on a GPU
    return preferred_or_first_valid(space, digits);
  }
  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "block_row_warps", "block_col_warps", "warp_row_tiles", "warp_col_tiles",
        "chunk",           "offset",          "offset_cs",      "vec",
        "wmma_m",          "threads",         "blocks",         "accumulators",
        "shared_bytes",    "mma_per_load",    "k_steps",        "stages"};
    return names;
  }
  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const GemmExtents e = gemm_extents(task.workload);
    const TensorcoreSchedule s = tensorcore_schedule(e, space, config);
    const auto grid = s.grid(e);
    return {log_feature(s.block_row_warps), log_feature(s.block_col_warps),
            log_feature(s.warp_row_tiles), log_feature(s.warp_col_tiles), log_feature(s.chunk),
            static_cast<float>(s.offset), static_cast<float>(s.offset_cs), log_feature(s.vec),
            log_feature(s.wmma_m), log_feature(s.threads()),
            log_feature(double(grid[0]) * double(grid[1]) * double(grid[2])),
            log_feature(s.accumulators()), log_feature(s.shared_bytes()),
            // A warp's mma.sync per 32-bit fragment register it loads from shared memory.
            static_cast<float>(double(s.mma_rows() * s.mma_cols()) /
                               double(s.mma_rows() * 4 + s.mma_cols() * 2)),
            log_feature(double((e.k + s.tile_k() - 1) / s.tile_k())), static_cast<float>(s.stages)};
  }
  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const GemmExtents e = gemm_extents(task.workload);
    const auto grid = tensorcore_schedule(e, space, config).grid(e);
    const OperandShapes shapes = operand_shapes(task.workload);
    KernelSignature sig;
    sig.data_shape = shapes.data;
    sig.weight_shape = shapes.weight;
    sig.out_shape = shapes.out;
    sig.parallel_extent = grid[0] * grid[1] * grid[2];  // blocks
    return sig;
  }
};

class DenseTensorcoreCudaTemplate final : public TensorcoreGemmTemplate {
 public:
  std::string_view name() const override { return "dense_tensorcore.cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kDense; }
};

class BatchMatmulTensorcoreCudaTemplate final : public TensorcoreGemmTemplate {
 public:
  std::string_view name() const override { return "batch_matmul_tensorcore.cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kBatchMatmul; }
};

class Conv2dNchwTensorcoreCudaTemplate final : public TensorcoreGemmTemplate {
 public:
  std::string_view name() const override { return "conv2d_nchw_tensorcore.cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kConv2d; }
  NetworkLayout network_layout() const override { return NetworkLayout::kPlain; }
  ConvArgsLayout autotvm_conv_args() const override { return ConvArgsLayout::kNoLayouts; }
  // Ungrouped convolutions (the GEMM has one weight matrix per image); depthwise ones have
  // their own template.
  Status accepts(const Workload& w) const override { return Template::accepts(w); }
};

}  // namespace

MmaShape mma_shape(Precision p) {
  return uses_tf32_mma(p) ? MmaShape{16, 8, 8} : MmaShape{16, 8, 16};
}

GemmExtents gemm_extents(const Workload& w) {
  if (const auto* b = std::get_if<BatchMatmulWorkload>(&w))
    return {b->batch, b->m, b->n, b->k, !b->transpose_b, b->precision, std::nullopt};
  if (const auto* c = std::get_if<Conv2dWorkload>(&w))
    return {c->batch,
            c->out_channels,
            c->out_height() * c->out_width(),
            c->in_channels / c->groups * c->kernel_h * c->kernel_w,
            false,
            c->precision,
            *c};
  const auto& d = std::get<DenseWorkload>(w);
  return {1, d.batch, d.out_features, d.in_features, false, d.precision, std::nullopt};
}

ConfigSpace tensorcore_space(const std::string& template_name, const GemmExtents& e,
                             const GpuLimits& limits) {
  std::vector<Knob> knobs{
      ints_knob("block_row_warps", {1, 2, 4}),
      ints_knob("block_col_warps", {1, 2, 4}),
      ints_knob("warp_row_tiles", {1, 2, 4}),
      ints_knob("warp_col_tiles", {1, 2, 4}),
      ints_knob("chunk", {1, 2, 4, 8}),
      ints_knob("offset", uses_tf32_mma(e.precision) ? std::vector<int64_t>{0, 4}
                                                     : std::vector<int64_t>{0, 8}),
      ints_knob("offsetCS", {0, 8}),
      ints_knob("vec", {1, 2, 4, 8}),
  };
  if (!uses_tf32_mma(e.precision)) knobs.push_back(ints_knob("wmma_m", wmma_m_candidates(e)));
  knobs.push_back(ints_knob("stages", {1, 2, 3}));
  std::vector<Knob> captured = knobs;
  auto is_valid = [captured, e, limits](const std::vector<int32_t>& d) {
    return valid(e, decode(e, captured, d), limits);
  };
  return ConfigSpace(template_name, std::move(knobs), is_valid);
}

TensorcoreSchedule tensorcore_schedule(const GemmExtents& e, const ConfigSpace& space,
                                       const Config& c) {
  return decode(e, space.knobs(), c.digits);
}

const Template& dense_tensorcore_cuda_template() {
  static const DenseTensorcoreCudaTemplate instance;
  return instance;
}

const Template& batch_matmul_tensorcore_cuda_template() {
  static const BatchMatmulTensorcoreCudaTemplate instance;
  return instance;
}

const Template& conv2d_nchw_tensorcore_cuda_template() {
  static const Conv2dNchwTensorcoreCudaTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
