#include "schedule_space/conv2d_winograd_cuda_template.h"

#include <algorithm>
#include <cmath>

#include "schedule_space/conv2d_winograd_template.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"
#include "schedule_space/winograd_transform.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::largest_divisor_at_most;
using util::log_feature;
using util::option_index;
using util::resolve_split;
using util::split_sizes;

constexpr int64_t kMaxSharedFloats = 48 * 1024 / 4;

int64_t tiles(const Conv2dWorkload& w, int m) {
  return w.batch * ceil_div(w.out_height(), m) * ceil_div(w.out_width(), m);
}

WinogradCudaSchedule decode(const Conv2dWorkload& w, const std::vector<Knob>& knobs,
                            const std::vector<int32_t>& d) {
  WinogradCudaSchedule s;
  s.m = winograd_cuda_tile(w);
  s.tiles_h = ceil_div(w.out_height(), s.m);
  s.tiles_w = ceil_div(w.out_width(), s.m);
  s.y = resolve_split<4>(split_sizes(knobs[1].options[d[1]]), w.out_channels);
  s.x = resolve_split<4>(split_sizes(knobs[2].options[d[2]]), tiles(w, s.m));
  s.rc = resolve_split<2>(split_sizes(knobs[3].options[d[3]]), w.in_channels);
  s.auto_unroll_max_step = std::get<int64_t>(knobs[4].options[d[4]]);
  s.unroll_explicit = std::get<int64_t>(knobs[5].options[d[5]]) != 0;
  s.chunk = largest_divisor_at_most(
      s.rc[1], std::max<int64_t>(1, kMaxSharedFloats / s.shared_floats_per_channel()));
  return s;
}

class Conv2dNchwWinogradCudaTemplate final : public Template {
 public:
  std::string_view name() const override { return "conv2d_nchw_winograd.cuda"; }
  std::vector<std::string_view> aliases() const override { return {"winograd"}; }
  std::string_view backend() const override { return "cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kConv2d; }
  NetworkLayout network_layout() const override { return NetworkLayout::kPlain; }
  ConvArgsLayout autotvm_conv_args() const override { return ConvArgsLayout::kNoLayouts; }
  std::string_view algorithm() const override { return "winograd"; }
  // The kernel reads U, transformed once from the weight (at compile time in a network).
  bool needs_constant_weight() const override { return true; }
  Status accepts(const Workload& w) const override {
    return winograd_accepts(std::get<Conv2dWorkload>(w), "conv2d_nchw_winograd.cuda");
  }

  ConfigSpace config_space(const Task& task) const override {
    return conv2d_nchw_winograd_cuda_space(workload(task));
  }

  // AutoTVM's fallback is the first entity of every knob (one thread per block). Ours: up to
  // 16 output channels by 16 tiles of threads, one output per thread, 8 input channels per
  // step; shrunk until valid.
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const Conv2dWorkload& w = workload(task);
    const auto& knobs = space.knobs();
    const int64_t p = tiles(w, winograd_cuda_tile(w));
    for (int64_t cap : {16, 8, 4, 1}) {
      std::vector<int32_t> d(knobs.size(), 0);
      d[1] = option_index(
          knobs[1], std::vector<int64_t>{-1, 1, largest_divisor_at_most(w.out_channels, cap), 1});
      d[2] =
          option_index(knobs[2], std::vector<int64_t>{-1, 1, largest_divisor_at_most(p, cap), 1});
      d[3] = option_index(knobs[3],
                          std::vector<int64_t>{-1, largest_divisor_at_most(w.in_channels, 8)});
      d[4] = option_index(knobs[4], int64_t{128});
      d[5] = option_index(knobs[5], int64_t{1});
      auto c = space.config_from_digits(d);
      if (c && space.is_valid(*c)) return *c;
    }
    return *space.config_at(0);  // one thread, one output: always valid
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "y_block",         "y_vthread",       "y_thread", "y_inner",  "x_block",
        "x_vthread",       "x_thread",        "x_inner",  "rc_outer", "rc_inner",
        "auto_unroll",     "unroll_explicit", "tile_m",   "chunk",    "threads",
        "accumulators",    "shared_bytes",    "blocks",   "steps",    "fma_per_load",
        "warps_per_block", "tail_warp"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const WinogradCudaSchedule s = conv2d_nchw_winograd_cuda_schedule(w, space, config);
    std::vector<float> v;
    util::append_split_features(v, s.y, s.x, s.rc);
    util::append_unroll_features(v, s.auto_unroll_max_step, s.unroll_explicit);
    v.push_back(static_cast<float>(s.m));
    v.push_back(log_feature(s.chunk));
    const double threads = static_cast<double>(s.threads());
    const auto g = s.grid();
    util::append_launch_features(v, threads, s.accumulators(), s.shared_bytes(),
                                 static_cast<double>(g[0]) * g[1]);
    v.push_back(log_feature(static_cast<double>(w.in_channels) / s.chunk));
    v.push_back(static_cast<float>(static_cast<double>(s.tile_co()) * s.tile_p() /
                                   static_cast<double>(s.tile_co() + s.tile_p())));
    util::append_warp_features(v, threads);
    return v;
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const WinogradCudaSchedule s = conv2d_nchw_winograd_cuda_schedule(w, space, config);
    const auto g = s.grid();
    return util::nchw_conv_signature(w, {s.points(), 1, w.in_channels, w.out_channels},
                                     g[0] * g[1]);
  }

  // AutoTVM's U layout (alpha, alpha, CI, CO): the transform's output blocked by all of CO.
  Tensor pack_weight(const KernelSignature& sig, const Tensor& weight) const override {
    const int alpha = static_cast<int>(std::lround(std::sqrt(double(sig.weight_shape[0]))));
    return winograd_transform_weight(weight, alpha - 2, sig.weight_shape[3]);
  }

  // F(m x m, 3 x 3) multiplies alpha^2 products per tile and channel pair where the direct
  // convolution multiplies 9 m^2.
  double fewest_flop(const Task& task, const ConfigSpace&, const Config&) const override {
    const int m = winograd_cuda_tile(workload(task));
    return flop(task) * double(m + 2) * (m + 2) / (9.0 * m * m);
  }

 private:
  static const Conv2dWorkload& workload(const Task& task) {
    return std::get<Conv2dWorkload>(task.workload);
  }
};

bool inner_factors_are_one(const std::vector<int64_t>& e) {
  for (size_t i = 1; i < e.size(); ++i)
    if (e[i] != 1) return false;
  return true;
}

}  // namespace

int winograd_cuda_tile(const Conv2dWorkload& w) { return w.in_height % 8 == 0 ? 4 : 2; }

ConfigSpace conv2d_nchw_winograd_cuda_space(const Conv2dWorkload& w) {
  const int m = winograd_cuda_tile(w);
  const int64_t points = int64_t{m + 2} * (m + 2);
  std::vector<Knob> knobs;
  Knob tile_b = make_split_knob("tile_b", points, 4, SplitPolicy::kFactors);
  std::vector<KnobValue> kept;
  for (const KnobValue& v : tile_b.options)
    if (inner_factors_are_one(split_sizes(v))) kept.push_back(v);
  tile_b.options = std::move(kept);
  knobs.push_back(std::move(tile_b));
  knobs.push_back(make_split_knob("tile_y", w.out_channels, 4, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_x", tiles(w, m), 4, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_rc", w.in_channels, 2, SplitPolicy::kFactors));
  util::add_unroll_knobs(knobs, 128);
  std::vector<Knob> captured = knobs;
  auto valid = [captured, w](const std::vector<int32_t>& d) {
    const WinogradCudaSchedule s = decode(w, captured, d);
    const auto g = s.grid();
    return s.shared_floats_per_channel() <= kMaxSharedFloats &&
           fits_universal_limits(launch_usage({s.x[2], s.y[2], 1}, g, s.shared_bytes()),
                                 s.accumulators());
  };
  return ConfigSpace("conv2d_nchw_winograd.cuda", std::move(knobs), valid);
}

WinogradCudaSchedule conv2d_nchw_winograd_cuda_schedule(const Conv2dWorkload& w,
                                                        const ConfigSpace& space,
                                                        const Config& config) {
  return decode(w, space.knobs(), config.digits);
}

const Template& conv2d_nchw_winograd_cuda_template() {
  static const Conv2dNchwWinogradCudaTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
