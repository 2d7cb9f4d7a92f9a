#include "schedule_space/conv2d_winograd_template.h"

#include <algorithm>
#include <cmath>

#include "schedule_space/layout.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"
#include "schedule_space/winograd_transform.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::largest_divisor_at_most;
using util::log_feature;

constexpr int64_t kRegisterTiles[] = {1, 2, 3, 4, 6, 8};
constexpr int64_t kBlocks[] = {1, 2, 3, 4};
// The first is 1: records made before the knob existed decode to it.
constexpr int64_t kOcSplits[] = {1, 2, 4, 8};
// 0 first, for the same reason.
constexpr int64_t kPrefetch[] = {0, 1};

// Knob positions, fixed by conv2d_winograd_space (prefetch, last, plays no part in validity).
enum Position { kIc = 0, kOc = 1, kM = 2, kRegT = 3, kBlockT = 4, kOcSplit = 5 };

int64_t scratch_bytes(const WinogradSchedule& s, int64_t in_channels) {
  const int64_t a2 = int64_t{s.alpha()} * s.alpha();
  return 4 * a2 * s.tiles_per_block() * (in_channels + s.oc_bn);
}

bool schedule_valid(const WinogradSchedule& s, const Conv2dWorkload& w, int64_t lanes) {
  const int64_t vectors = ceil_div(s.oc_bn, lanes);
  const int64_t tiles = winograd_tiling(w, s.m).count();
  return s.reg_t * vectors <= kMaxAccumulators &&
         scratch_bytes(s, w.in_channels) <= kMaxWinogradScratchBytes &&
         s.tiles_per_block() - s.reg_t < tiles && s.oc_split <= w.out_channels / s.oc_bn;
}

}  // namespace

Status winograd_accepts(const Conv2dWorkload& w, std::string_view template_name) {
  auto refuse = [&](const std::string& what) {
    return invalid_argument(std::string(template_name) +
                            " serves 3x3 stride-1 undilated convolutions; " + what + " (" +
                            describe_workload(w) + ")");
  };
  if (w.kernel_h != 3 || w.kernel_w != 3)
    return refuse("this kernel is " + std::to_string(w.kernel_h) + "x" +
                  std::to_string(w.kernel_w));
  if (w.stride_h != 1 || w.stride_w != 1)
    return refuse("this stride is " + std::to_string(w.stride_h) + "," +
                  std::to_string(w.stride_w));
  if (w.dilation_h != 1 || w.dilation_w != 1)
    return refuse("this dilation is " + std::to_string(w.dilation_h) + "," +
                  std::to_string(w.dilation_w));
  if (w.groups != 1) return refuse("this one has groups = " + std::to_string(w.groups));
  return ok_status();
}

WinogradTiling winograd_tiling(const Conv2dWorkload& w, int m) {
  return {ceil_div(w.out_height(), m), ceil_div(w.out_width(), m)};
}

int64_t winograd_parallel_extent(const Conv2dWorkload& w, const WinogradSchedule& s) {
  return s.oc_split * w.batch * ceil_div(winograd_tiling(w, s.m).count(), s.tiles_per_block());
}

ConfigSpace conv2d_winograd_space(const Conv2dWorkload& w, int vector_lanes) {
  std::vector<Knob> knobs;
  knobs.push_back(make_split_knob("tile_ic", w.in_channels, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_oc", w.out_channels, 2, SplitPolicy::kFactors));
  std::vector<KnobValue> tiles, regs, blocks, splits, prefetch;
  for (int m : kWinogradTiles) tiles.emplace_back(int64_t{m});
  for (int64_t r : kRegisterTiles) regs.emplace_back(r);
  for (int64_t b : kBlocks) blocks.emplace_back(b);
  for (int64_t g : kOcSplits) splits.emplace_back(g);
  for (int64_t f : kPrefetch) prefetch.emplace_back(f);
  knobs.push_back(make_other_knob("tile_m", tiles));
  knobs.push_back(make_other_knob("reg_t", regs));
  knobs.push_back(make_other_knob("block_t", blocks));
  knobs.push_back(make_other_knob("oc_split", splits));
  knobs.push_back(make_other_knob("prefetch", prefetch));
  std::vector<Knob> captured = knobs;
  const int64_t lanes = vector_lanes;
  auto valid = [captured, lanes, w](const std::vector<int32_t>& d) {
    WinogradSchedule s;
    s.ic_bn = util::inner_factor(captured[kIc].options[d[kIc]]);
    s.oc_bn = util::inner_factor(captured[kOc].options[d[kOc]]);
    s.m = static_cast<int>(std::get<int64_t>(captured[kM].options[d[kM]]));
    s.reg_t = std::get<int64_t>(captured[kRegT].options[d[kRegT]]);
    s.block_t = std::get<int64_t>(captured[kBlockT].options[d[kBlockT]]);
    s.oc_split = std::get<int64_t>(captured[kOcSplit].options[d[kOcSplit]]);
    return schedule_valid(s, w, lanes);
  };
  return ConfigSpace("conv2d_NCHWc_winograd.x86", std::move(knobs), valid);
}

WinogradSchedule conv2d_winograd_schedule(const ConfigSpace& space, const Config& config) {
  WinogradSchedule s;
  s.ic_bn = util::inner_factor(space.value(config, "tile_ic"));
  s.oc_bn = util::inner_factor(space.value(config, "tile_oc"));
  s.m = static_cast<int>(std::get<int64_t>(space.value(config, "tile_m")));
  s.reg_t = std::get<int64_t>(space.value(config, "reg_t"));
  s.block_t = std::get<int64_t>(space.value(config, "block_t"));
  s.oc_split = std::get<int64_t>(space.value(config, "oc_split"));
  s.prefetch = std::get<int64_t>(space.value(config, "prefetch")) != 0;
  return s;
}

Config conv2d_winograd_default(const ConfigSpace& space, const Conv2dWorkload& w,
                               int vector_lanes) {
  const auto& knobs = space.knobs();
  const int64_t oc_bn = largest_divisor_at_most(w.out_channels, 2 * vector_lanes);
  const int64_t ic_bn = largest_divisor_at_most(w.in_channels, vector_lanes);
  const int64_t m = std::min(w.out_height(), w.out_width()) < 8 ? 2 : 4;
  std::vector<int32_t> digits(knobs.size(), 0);
  digits[kIc] = util::option_index(knobs[kIc], KnobValue(std::vector<int64_t>{-1, ic_bn}));
  digits[kOc] = util::option_index(knobs[kOc], KnobValue(std::vector<int64_t>{-1, oc_bn}));
  digits[kM] = util::option_index(knobs[kM], KnobValue(m));
  digits[kBlockT] = 0;
  // The largest register tile that is valid with these blocks.
  for (int r = static_cast<int>(std::size(kRegisterTiles)) - 1; r >= 0; --r) {
    digits[kRegT] = r;
    if (auto c = space.config_from_digits(digits); c && space.is_valid(*c)) return *c;
  }
  return util::preferred_or_first_valid(space, digits);
}

namespace {

class Conv2dWinogradTemplate final : public Template {
 public:
  std::string_view name() const override { return "conv2d_NCHWc_winograd.x86"; }
  std::vector<std::string_view> aliases() const override { return {"winograd"}; }
  OperatorKind operator_kind() const override { return OperatorKind::kConv2d; }
  std::string_view algorithm() const override { return "winograd"; }
  // The weights are transformed to U once, at compile time.
  bool needs_constant_weight() const override { return true; }
  Status accepts(const Workload& w) const override {
    return winograd_accepts(std::get<Conv2dWorkload>(w));
  }

  ConfigSpace config_space(const Task& task) const override {
    const int64_t lanes = task.target.vector_lanes;
    // The batched products of the transformed tiles: a register tile per (tiles, channels).
    return util::offer_tiles_for(conv2d_winograd_space(workload(task), task.target.vector_lanes),
                                 task.target, util::TileBound::kFmaPipes,
                                 [lanes](const ConfigSpace& space, const Config& c) {
                                   const WinogradSchedule s = conv2d_winograd_schedule(space, c);
                                   return util::tile_with(s.reg_t * ceil_div(s.oc_bn, lanes),
                                                          ceil_div(s.oc_bn, lanes), s.reg_t);
                                 });
  }
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    return conv2d_winograd_default(space, workload(task), task.target.vector_lanes);
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{"m",
                                                "ic_bn",
                                                "oc_bn",
                                                "reg_t",
                                                "block_t",
                                                "vectors",
                                                "accumulators",
                                                "full_vectors",
                                                "tiles",
                                                "tile_waste",
                                                "block_waste",
                                                "parallel",
                                                "scratch_bytes",
                                                "weight_bytes",
                                                "mults_ratio",
                                                "fma_per_load",
                                                "oc_split",
                                                "weight_bytes_per_iteration",
                                                "prefetch"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const int64_t lanes = task.target.vector_lanes;
    const Conv2dWorkload& w = workload(task);
    const WinogradSchedule s = conv2d_winograd_schedule(space, config);
    const WinogradTiling tiling = winograd_tiling(w, s.m);
    const int64_t vectors = ceil_div(s.oc_bn, lanes);
    const int64_t acc = s.reg_t * vectors;
    const int64_t t = s.tiles_per_block();
    const int64_t blocks = ceil_div(tiling.count(), t);
    const double a2 = double(s.alpha()) * s.alpha();
    const double covered = double(tiling.rows * s.m) * double(tiling.cols * s.m);
    return {static_cast<float>(s.m),
            log_feature(s.ic_bn),
            log_feature(s.oc_bn),
            static_cast<float>(s.reg_t),
            static_cast<float>(s.block_t),
            static_cast<float>(vectors),
            static_cast<float>(acc),
            s.oc_bn % lanes == 0 ? 1.0f : 0.0f,
            log_feature(tiling.count()),
            static_cast<float>(covered / double(w.out_height() * w.out_width())),
            static_cast<float>(double(blocks * t) / double(tiling.count())),
            log_feature(w.batch * blocks * s.oc_split),
            log_feature(scratch_bytes(s, w.in_channels)),
            log_feature(4.0 * a2 * w.in_channels * w.out_channels),
            static_cast<float>(a2 / (9.0 * s.m * s.m)),
            static_cast<float>(acc) / static_cast<float>(vectors + s.reg_t),
            static_cast<float>(s.oc_split),
            log_feature(4.0 * a2 * w.in_channels * w.out_channels / double(s.oc_split)),
            s.prefetch ? 1.0f : 0.0f};
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const WinogradSchedule s = conv2d_winograd_schedule(space, config);
    const int64_t a2 = int64_t{s.alpha()} * s.alpha();
    return util::blocked_conv_signature(w, s.ic_bn, s.oc_bn,
                                        {a2, w.out_channels / s.oc_bn, w.in_channels, s.oc_bn},
                                        winograd_parallel_extent(w, s));
  }

  // F(m x m, 3 x 3) multiplies alpha^2 products per tile and channel pair where the direct
  // convolution multiplies 9 m^2: its GEMM is all it must do (the transforms are extra).
  double fewest_flop(const Task& task, const ConfigSpace& space,
                     const Config& config) const override {
    const WinogradSchedule s = conv2d_winograd_schedule(space, config);
    return flop(task) * double(s.alpha()) * s.alpha() / (9.0 * s.m * s.m);
  }

  Tensor pack_data(const KernelSignature& sig, const Tensor& data) const override {
    return pack_nchwc(data, sig.ic_block);
  }
  Tensor pack_weight(const KernelSignature& sig, const Tensor& weight) const override {
    const int alpha = static_cast<int>(std::lround(std::sqrt(double(sig.weight_shape[0]))));
    return winograd_transform_weight(weight, alpha - 2, sig.oc_block);
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

const Template& conv2d_winograd_template() {
  static const Conv2dWinogradTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
