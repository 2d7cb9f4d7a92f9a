#include "schedule_space/conv2d_nchwc_template.h"

#include <algorithm>
#include <cmath>

#include "schedule_space/layout.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::inner_factor;
using util::largest_divisor_at_most;
using util::log_feature;

bool is_1x1(const Conv2dWorkload& w) { return w.kernel_h == 1 && w.kernel_w == 1; }

int64_t accumulators(const Conv2dSchedule& s, int64_t lanes) {
  return s.reg_h * s.reg_n * ceil_div(s.oc_bn, lanes);
}

/// Whether a fallback row of `columns` tiles of `vectors` vectors is valid and keeps its sums
/// in registers: at most 28 accumulators of 32 zmm (AutoTVM-compatible; the widest such row may
/// spill one register, which costs less than a narrower row), 12 of 16 ymm (AutoTVM's 28-wide
/// row spills half its sums there).
bool row_fits(int64_t columns, int64_t vectors, int vector_registers) {
  return columns * vectors <= std::min<int64_t>(kMaxAccumulators, vector_registers - 4);
}

}  // namespace

ConfigSpace conv2d_nchwc_space(const Conv2dWorkload& w, int vector_lanes) {
  std::vector<Knob> knobs;
  knobs.push_back(make_split_knob("tile_ic", w.in_channels, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_oc", w.out_channels, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_ow", w.out_width(), 2, SplitPolicy::kVerbose, 64));
  if (!is_1x1(w))
    knobs.push_back(make_other_knob("unroll_kw", {KnobValue(true), KnobValue(false)}));
  std::vector<KnobValue> rows;
  for (int64_t r = 1; r <= std::min<int64_t>(4, w.out_height()); ++r) rows.emplace_back(r);
  knobs.push_back(make_other_knob("tile_oh", rows));
  knobs.push_back(make_other_knob("oc_inner", {KnobValue(false), KnobValue(true)}));
  knobs.push_back(make_other_knob("split_reduction", {KnobValue(false), KnobValue(true)}));

  const int64_t lanes = vector_lanes;
  const int64_t oh = w.out_height();
  // Positions are fixed above: 0 ic, 1 oc, 2 ow, then unroll_kw (non-1x1), tile_oh, oc_inner,
  // split_reduction.
  const size_t oh_pos = knobs.size() - 3;
  const size_t split_pos = knobs.size() - 1;
  // Last, false first: records made before it existed keep their index and meaning.
  if (4 * w.out_channels * w.in_channels * w.kernel_h * w.kernel_w >= kPrefetchWeightBytes)
    knobs.push_back(make_other_knob("prefetch_weights", {KnobValue(false), KnobValue(true)}));
  std::vector<Knob> captured = knobs;
  auto valid = [captured, lanes, oh, oh_pos, split_pos, w](const std::vector<int32_t>& d) {
    const int64_t ic_bn = inner_factor(captured[0].options[d[0]]);
    const int64_t oc_bn = inner_factor(captured[1].options[d[1]]);
    const int64_t reg_n = inner_factor(captured[2].options[d[2]]);
    const int64_t reg_h = std::get<int64_t>(captured[oh_pos].options[d[oh_pos]]);
    const int64_t vectors = (oc_bn + lanes - 1) / lanes;
    if (reg_h > oh || reg_h * reg_n * vectors > kMaxAccumulators) return false;
    // A split that would leave one slice is the unsplit config again; one whose row of tiles
    // holds more partial sums than a task keeps on its stack is not offered.
    if (std::get<bool>(captured[split_pos].options[d[split_pos]]))
      return reduction_slice_chunks(w, ic_bn, oc_bn) < w.in_channels / ic_bn &&
             4 * reg_h * w.out_width() * oc_bn <= kPartialSumBytes;
    return true;
  };
  return ConfigSpace("conv2d_NCHWc.x86", std::move(knobs), valid);
}

Conv2dSchedule conv2d_nchwc_schedule(const ConfigSpace& space, const Config& config) {
  Conv2dSchedule s;
  s.ic_bn = inner_factor(space.value(config, "tile_ic"));
  s.oc_bn = inner_factor(space.value(config, "tile_oc"));
  s.reg_n = inner_factor(space.value(config, "tile_ow"));
  s.reg_h = std::get<int64_t>(space.value(config, "tile_oh"));
  s.oc_inner = std::get<bool>(space.value(config, "oc_inner"));
  if (space.knob_position("unroll_kw") >= 0)
    s.unroll_kw = std::get<bool>(space.value(config, "unroll_kw"));
  // Spaces of records written before the knob existed decode as unsplit.
  if (space.knob_position("split_reduction") >= 0)
    s.split_reduction = std::get<bool>(space.value(config, "split_reduction"));
  if (space.knob_position("prefetch_weights") >= 0)
    s.prefetch_weights = std::get<bool>(space.value(config, "prefetch_weights"));
  return s;
}

int64_t reduction_slice_chunks(const Conv2dWorkload& w, int64_t ic_bn, int64_t oc_bn) {
  const int64_t chunk_bytes = 4 * ic_bn * w.kernel_h * w.kernel_w * oc_bn;
  return std::max<int64_t>(1, kReductionSliceBytes / chunk_bytes);
}

ReductionSlicing reduction_slicing(const Conv2dWorkload& w, const Conv2dSchedule& s) {
  ReductionSlicing r;
  const int64_t ic_chunks = w.in_channels / s.ic_bn;
  const int64_t oc_chunks = w.out_channels / s.oc_bn;
  const int64_t row_tiles = ceil_div(w.out_height(), s.reg_h);
  r.chunks_per_slice = ic_chunks;
  r.row_groups = row_tiles;
  if (s.split_reduction) {
    r.chunks_per_slice = std::min(ic_chunks, reduction_slice_chunks(w, s.ic_bn, s.oc_bn));
    r.slices = ceil_div(ic_chunks, r.chunks_per_slice);
    // As many row tiles as the partial-sum budget holds, fewer where the tasks would be too
    // few to share among threads.
    const int64_t tile_row_bytes = 4 * s.reg_h * w.out_width() * s.oc_bn;
    int64_t per_task = std::clamp<int64_t>(kPartialSumBytes / tile_row_bytes, 1, row_tiles);
    const int64_t outer = w.batch * oc_chunks;
    if (outer * ceil_div(row_tiles, per_task) < kSplitReductionMinTasks) {
      const int64_t groups = std::min(row_tiles, ceil_div(kSplitReductionMinTasks, outer));
      per_task = std::min(per_task, ceil_div(row_tiles, groups));
    }
    r.row_tiles_per_task = per_task;
    r.row_groups = ceil_div(row_tiles, per_task);
  }
  r.tasks = w.batch * oc_chunks * r.row_groups;
  return r;
}

Config conv2d_nchwc_default(const ConfigSpace& space, const Conv2dWorkload& w, int vector_lanes,
                            int vector_registers) {
  const auto& knobs = space.knobs();
  // Two vectors of output channels where they divide, not AutoTVM's one: each input broadcast
  // then feeds twice the FMAs, and the rows (half as wide) still hold enough sums for the pipes
  // (untuned resnet-50 on an AVX-512 Xeon: 1.44x -> 1.09x ONNX Runtime's time, one thread).
  const int64_t oc_bn = largest_divisor_at_most(w.out_channels, 2 * vector_lanes);
  const int64_t ic_bn = largest_divisor_at_most(w.in_channels, oc_bn);
  const int64_t vectors = (oc_bn + vector_lanes - 1) / vector_lanes;
  // AutoTVM caps reg_n at 31; we also keep the tile within the registers, so that the fallback
  // is valid and does not spill.
  int64_t widest = 1;
  while (widest < 31 && row_fits(widest + 1, vectors, vector_registers)) ++widest;
  const int64_t reg_n = largest_divisor_at_most(w.out_width(), widest);
  std::vector<int32_t> digits(knobs.size(), 0);
  digits[0] = util::split_with_inner(knobs[0], ic_bn);
  digits[1] = util::split_with_inner(knobs[1], oc_bn);
  digits[2] = util::split_with_inner(knobs[2], reg_n);
  const int kw = space.knob_position("unroll_kw");
  if (kw >= 0) digits[kw] = 1;  // false
  // AutoTVM's fallback reads every weight once per row of tiles; split into slices whose weights
  // stay in L1 over several rows where the split is valid (resnet-18's untuned network on an
  // AVX-512 Xeon: 68 -> 46 ms on one thread; more rows per tile for narrow outputs lost some of
  // that, 54 ms).
  const int split = space.knob_position("split_reduction");
  if (split >= 0) {
    digits[split] = 1;
    if (auto c = space.config_from_digits(digits); !c || !space.is_valid(*c)) digits[split] = 0;
  }
  auto c = space.config_from_digits(digits);
  TT_CHECK(c.has_value()) << c.error().message;
  return *c;
}

Conv2dSchedule conv2d_nchwc_schedule_for_blocks(const Conv2dWorkload& w, int64_t ic_bn,
                                                int64_t oc_bn, int vector_lanes, int64_t widest,
                                                int vector_registers) {
  Conv2dSchedule s;
  s.ic_bn = ic_bn;
  s.oc_bn = oc_bn;
  const int64_t vectors = (oc_bn + vector_lanes - 1) / vector_lanes;
  for (int64_t n = std::min<int64_t>(w.out_width(), widest); n >= 1; --n)
    if (w.out_width() % n == 0 && row_fits(n, vectors, vector_registers)) {
      s.reg_n = n;
      break;
    }
  return s;
}

namespace {

class Conv2dNCHWcTemplate final : public Template {
 public:
  std::string_view name() const override { return "conv2d_NCHWc.x86"; }
  std::vector<std::string_view> aliases() const override { return {"conv2d"}; }
  OperatorKind operator_kind() const override { return OperatorKind::kConv2d; }

  ConfigSpace config_space(const Task& task) const override {
    const int64_t lanes = task.target.vector_lanes;
    return util::offer_tiles_for(
        conv2d_nchwc_space(workload(task), task.target.vector_lanes), task.target,
        util::TileBound::kFmaPipes, [lanes](const ConfigSpace& space, const Config& c) {
          const Conv2dSchedule s = conv2d_nchwc_schedule(space, c);
          return util::tile_with(accumulators(s, lanes), ceil_div(s.oc_bn, lanes),
                                 s.reg_h * s.reg_n);
        });
  }
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    return conv2d_nchwc_default(space, workload(task), task.target.vector_lanes,
                                cpu_model_of(task.target).vector_registers);
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "ic_bn",        "oc_bn",           "reg_n",           "reg_h",        "unroll_kw",
        "vectors",      "accumulators",    "full_vectors",    "ow_tail",      "oh_tail",
        "parallel",     "tiles_per_task",  "reduction",       "inner_trip",   "input_tile_bytes",
        "weight_bytes", "output_bytes",    "fma_per_load",    "oc_inner",     "split_reduction",
        "slices",       "rows_per_task",   "fma_chain_cover", "register_use", "l1_share",
        "l2_share",     "prefetch_weights"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const int64_t lanes = task.target.vector_lanes;
    const Conv2dWorkload& w = workload(task);
    const Conv2dSchedule s = conv2d_nchwc_schedule(space, config);
    const int64_t oh = w.out_height(), ow = w.out_width();
    const int64_t vectors = ceil_div(s.oc_bn, lanes);
    const int64_t acc = s.reg_h * s.reg_n * vectors;
    const ReductionSlicing slicing = reduction_slicing(w, s);
    const int64_t in_rows = (s.reg_h - 1) * w.stride_h + (w.kernel_h - 1) * w.dilation_h + 1;
    const int64_t in_cols = (s.reg_n - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w + 1;
    // Relative to the machine, so that what is learnt on one CPU kind carries to another: a
    // step's weight block and input tile against L1; a task's weights and input rows against L2.
    const CpuModel cpu = cpu_model_of(task.target);
    const double step_bytes =
        4.0 * s.ic_bn * (w.kernel_h * w.kernel_w * s.oc_bn + in_rows * in_cols);
    const double task_bytes =
        4.0 * w.in_channels * (w.kernel_h * w.kernel_w * s.oc_bn + in_rows * w.in_width);
    return {log_feature(s.ic_bn),
            log_feature(s.oc_bn),
            log_feature(s.reg_n),
            static_cast<float>(s.reg_h),
            s.unroll_kw ? 1.0f : 0.0f,
            static_cast<float>(vectors),
            static_cast<float>(acc),
            s.oc_bn % lanes == 0 ? 1.0f : 0.0f,
            static_cast<float>(ow % s.reg_n) / static_cast<float>(s.reg_n),
            static_cast<float>(oh % s.reg_h) / static_cast<float>(s.reg_h),
            log_feature(slicing.tasks),
            log_feature(ceil_div(ow, s.reg_n)),
            log_feature(w.in_channels * w.kernel_h * w.kernel_w),
            log_feature(s.ic_bn),
            log_feature(4.0 * in_rows * in_cols * w.in_channels),
            log_feature(4.0 * w.in_channels * w.kernel_h * w.kernel_w * s.oc_bn),
            log_feature(4.0 * acc * lanes),
            static_cast<float>(acc) / static_cast<float>(vectors + s.reg_h * s.reg_n),
            s.oc_inner ? 1.0f : 0.0f,
            s.split_reduction ? 1.0f : 0.0f,
            log_feature(slicing.slices),
            log_feature(slicing.row_tiles_per_task),
            static_cast<float>(acc) / static_cast<float>(cpu.fma_chains),
            static_cast<float>(util::tile_with(acc, vectors, s.reg_h * s.reg_n).registers) /
                static_cast<float>(cpu.vector_registers),
            static_cast<float>(step_bytes / static_cast<double>(cpu.l1d_bytes)),
            static_cast<float>(task_bytes / static_cast<double>(cpu.l2_bytes)),
            s.prefetch_weights ? 1.0f : 0.0f};
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const Conv2dSchedule s = conv2d_nchwc_schedule(space, config);
    return util::blocked_conv_signature(w, s.ic_bn, s.oc_bn,
                                        util::oihwio_shape(w, s.ic_bn, s.oc_bn),
                                        reduction_slicing(w, s).tasks);
  }

  Tensor pack_data(const KernelSignature& sig, const Tensor& data) const override {
    return pack_nchwc(data, sig.ic_block);
  }
  Tensor pack_weight(const KernelSignature& sig, const Tensor& weight) const override {
    return pack_oihwio(weight, sig.ic_block, sig.oc_block);
  }

  // The widest register row of at most 31 columns that divides OW and fits, one row, kw not
  // unrolled, AutoTVM's loop order (conv2d_nchwc_schedule_for_blocks).
  std::optional<Config> config_for_blocks(const Task& task, const ConfigSpace& space,
                                          int64_t ic_block, int64_t oc_block) const override {
    const Conv2dWorkload& w = workload(task);
    const auto& knobs = space.knobs();
    const Conv2dSchedule s =
        conv2d_nchwc_schedule_for_blocks(w, ic_block, oc_block, task.target.vector_lanes, 31,
                                         cpu_model_of(task.target).vector_registers);
    std::vector<int32_t> digits(knobs.size(), 0);
    const int64_t factors[] = {s.ic_bn, s.oc_bn, s.reg_n};
    for (size_t k = 0; k < 3; ++k) {
      digits[k] = util::split_with_inner(knobs[k], factors[k]);
      if (digits[k] < 0) return std::nullopt;
    }
    if (const int kw = space.knob_position("unroll_kw"); kw >= 0) digits[kw] = 1;  // false
    auto c = space.config_from_digits(digits);
    if (!c || !space.is_valid(*c)) return std::nullopt;
    return *c;
  }
  Tensor output_to_plain(const KernelSignature&, const Tensor& out) const override {
    return unpack_nchwc(out);
  }
  Tensor output_from_plain(const KernelSignature& sig, const Tensor& plain) const override {
    return pack_nchwc(plain, sig.oc_block);
  }

 private:
  static const Conv2dWorkload& workload(const Task& task) {
    return std::get<Conv2dWorkload>(task.workload);
  }
};

}  // namespace

const Template& conv2d_nchwc_template() {
  static const Conv2dNCHWcTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
