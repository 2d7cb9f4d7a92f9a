#include "schedule_space/depthwise_conv2d_cuda_template.h"

#include <algorithm>
#include <cmath>

#include "schedule_space/depthwise_conv2d_nchwc_template.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::largest_divisor_at_most;
using util::log_feature;
using util::option_index;
using util::resolve_split;
using util::split_sizes;

DepthwiseCudaSchedule decode(const Conv2dWorkload& w, const std::vector<Knob>& knobs,
                             const std::vector<int32_t>& d) {
  DepthwiseCudaSchedule s;
  s.f = resolve_split<4>(split_sizes(knobs[0].options[d[0]]), w.out_channels);
  s.y = resolve_split<4>(split_sizes(knobs[1].options[d[1]]), w.out_height());
  s.x = resolve_split<4>(split_sizes(knobs[2].options[d[2]]), w.out_width());
  s.auto_unroll_max_step = std::get<int64_t>(knobs[3].options[d[3]]);
  s.unroll_explicit = std::get<int64_t>(knobs[4].options[d[4]]) != 0;
  return s;
}

class DepthwiseConv2dNchwCudaTemplate final : public Template {
 public:
  std::string_view name() const override { return "depthwise_conv2d_nchw.cuda"; }
  std::string_view backend() const override { return "cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kConv2d; }
  NetworkLayout network_layout() const override { return NetworkLayout::kPlain; }
  ConvArgsLayout autotvm_conv_args() const override { return ConvArgsLayout::kNoLayouts; }
  Status accepts(const Workload& w) const override {
    return depthwise_accepts(std::get<Conv2dWorkload>(w));
  }

  ConfigSpace config_space(const Task& task) const override {
    return depthwise_conv2d_nchw_cuda_space(workload(task));
  }

  // AutoTVM falls back to the nearest record of its TopHub reference log, which tensortune
  // does not ship. This config is of the kind those records hold: a block of up to 16 x 8
  // threads over the output plane (fewer when the plane is smaller) and as many channels as
  // bring it near 128 threads, two columns per thread where the row allows; the window
  // unrolled. Shrunk until it is valid.
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const Conv2dWorkload& w = workload(task);
    const auto& knobs = space.knobs();
    const int64_t xi = w.out_width() % 2 == 0 && w.out_width() >= 16 ? 2 : 1;
    const int64_t tx = largest_divisor_at_most(w.out_width() / xi, 16);
    const int64_t ty = largest_divisor_at_most(w.out_height(), 8);
    const int64_t tf =
        largest_divisor_at_most(w.out_channels, std::max<int64_t>(1, 128 / (tx * ty)));
    for (int64_t shrink : {1, 2, 4, 8}) {
      std::vector<int32_t> d(knobs.size(), 0);
      d[0] = option_index(
          knobs[0], std::vector<int64_t>{
                        -1, 1, largest_divisor_at_most(tf, std::max<int64_t>(1, tf / shrink)), 1});
      d[1] = option_index(knobs[1], std::vector<int64_t>{-1, 1, ty, 1});
      d[2] = option_index(knobs[2], std::vector<int64_t>{-1, 1, tx, xi});
      d[3] = option_index(knobs[3], int64_t{256});
      d[4] = option_index(knobs[4], int64_t{1});
      auto c = space.config_from_digits(d);
      if (c && space.is_valid(*c)) return *c;
    }
    return *space.config_at(0);  // one thread, nothing tiled: always valid
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "f_block",         "f_vthread",    "f_thread",    "f_inner",         "y_block",
        "y_vthread",       "y_thread",     "y_inner",     "x_block",         "x_vthread",
        "x_thread",        "x_inner",      "auto_unroll", "unroll_explicit", "threads",
        "accumulators",    "shared_bytes", "blocks",      "window_taps",     "fma_per_load",
        "warps_per_block", "tail_warp"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const DepthwiseCudaSchedule s = depthwise_conv2d_nchw_cuda_schedule(w, space, config);
    std::vector<float> v;
    util::append_split_features(v, s.f, s.y, s.x);
    util::append_unroll_features(v, s.auto_unroll_max_step, s.unroll_explicit);
    const auto g = s.grid(w);
    const double threads = static_cast<double>(s.threads());
    const double fma =
        static_cast<double>(s.tile_f()) * s.tile_y() * s.tile_x() * w.kernel_h * w.kernel_w;
    const double loads = s.input_tile_floats(w) + s.weight_tile_floats(w);
    util::append_launch_features(v, threads, s.accumulators(), s.shared_bytes(w),
                                 static_cast<double>(g[0]) * g[1] * g[2]);
    v.push_back(log_feature(static_cast<double>(w.kernel_h) * w.kernel_w));
    v.push_back(static_cast<float>(fma / loads));
    util::append_warp_features(v, threads);
    return v;
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const DepthwiseCudaSchedule s = depthwise_conv2d_nchw_cuda_schedule(w, space, config);
    const auto g = s.grid(w);
    return util::nchw_conv_signature(w, {w.out_channels, 1, w.kernel_h, w.kernel_w},
                                     g[0] * g[1] * g[2]);
  }

 private:
  static const Conv2dWorkload& workload(const Task& task) {
    return std::get<Conv2dWorkload>(task.workload);
  }
};

}  // namespace

ConfigSpace depthwise_conv2d_nchw_cuda_space(const Conv2dWorkload& w) {
  std::vector<Knob> knobs;
  util::add_output_tile_knobs(knobs, w);
  util::add_unroll_knobs(knobs, 256);
  std::vector<Knob> captured = knobs;
  auto valid = [captured, w](const std::vector<int32_t>& d) {
    const DepthwiseCudaSchedule s = decode(w, captured, d);
    const auto g = s.grid(w);  // (z, y, x)
    return fits_universal_limits(
        launch_usage({s.x[2], s.y[2], s.f[2]}, {g[2], g[1], g[0]}, s.shared_bytes(w)),
        s.accumulators());
  };
  return ConfigSpace("depthwise_conv2d_nchw.cuda", std::move(knobs), valid);
}

DepthwiseCudaSchedule depthwise_conv2d_nchw_cuda_schedule(const Conv2dWorkload& w,
                                                          const ConfigSpace& space,
                                                          const Config& config) {
  return decode(w, space.knobs(), config.digits);
}

const Template& depthwise_conv2d_nchw_cuda_template() {
  static const DepthwiseConv2dNchwCudaTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
