#include "schedule_space/conv2d_cuda_template.h"

#include <cmath>

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

Conv2dCudaSchedule decode(const Conv2dWorkload& w, const std::vector<Knob>& knobs,
                          const std::vector<int32_t>& d) {
  Conv2dCudaSchedule s;
  s.f = resolve_split<4>(split_sizes(knobs[0].options[d[0]]), w.out_channels);
  s.y = resolve_split<4>(split_sizes(knobs[1].options[d[1]]), w.out_height());
  s.x = resolve_split<4>(split_sizes(knobs[2].options[d[2]]), w.out_width());
  s.rc = resolve_split<2>(split_sizes(knobs[3].options[d[3]]), w.in_channels);
  s.ry = resolve_split<2>(split_sizes(knobs[4].options[d[4]]), w.kernel_h);
  s.rx = resolve_split<2>(split_sizes(knobs[5].options[d[5]]), w.kernel_w);
  s.auto_unroll_max_step = std::get<int64_t>(knobs[6].options[d[6]]);
  s.unroll_explicit = std::get<int64_t>(knobs[7].options[d[7]]) != 0;
  return s;
}

class Conv2dNchwCudaTemplate final : public Template {
 public:
  std::string_view name() const override { return "conv2d_nchw.cuda"; }
  std::string_view backend() const override { return "cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kConv2d; }
  NetworkLayout network_layout() const override { return NetworkLayout::kPlain; }
  ConvArgsLayout autotvm_conv_args() const override { return ConvArgsLayout::kNoLayouts; }

  // AutoTVM's 2018 CUDA logs (TopHub's cuda_v0.10: titanx, 1080ti, tx2, jetson) define the
  // kernel-height split as "tile_rx" and the kernel-width one as "tile_ry", in that order; its
  // v100 records and newer TVM name them tile_ry, tile_rx. In every version the first reduce
  // split defined after tile_rc is over KH: the names follow the positions (and the logged
  // index, mixed radix in definition order, then matches ours).
  Entity entity_from_autotvm(Entity logged) const override {
    std::vector<size_t> at;
    for (size_t i = 0; i < logged.size(); ++i)
      if (logged[i].first == "tile_ry" || logged[i].first == "tile_rx") at.push_back(i);
    if (at.size() == 2) {
      logged[at[0]].first = "tile_ry";
      logged[at[1]].first = "tile_rx";
    }
    return logged;
  }

  ConfigSpace config_space(const Task& task) const override {
    return conv2d_nchw_cuda_space(workload(task));
  }

  // AutoTVM falls back to the nearest config of its TopHub reference log, which tensortune
  // does not ship; this is a config of the same kind: 8x8 threads over the output plane (fewer
  // when the plane is smaller), up to 8 output channels per thread group, 4 per thread, the
  // whole kernel window and 8 input channels staged per step. Shrunk until it is valid.
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const Conv2dWorkload& w = workload(task);
    const auto& knobs = space.knobs();
    const int64_t tf = largest_divisor_at_most(w.out_channels, 8);
    const int64_t fi = largest_divisor_at_most(w.out_channels / tf, 4);
    const int64_t ty = largest_divisor_at_most(w.out_height(), 8);
    const int64_t tx = largest_divisor_at_most(w.out_width(), 8);
    for (int64_t rci : {largest_divisor_at_most(w.in_channels, 8), int64_t{1}}) {
      for (bool whole_window : {true, false}) {
        std::vector<int32_t> d(knobs.size(), 0);
        d[0] = option_index(knobs[0], std::vector<int64_t>{-1, 1, tf, fi});
        d[1] = option_index(knobs[1], std::vector<int64_t>{-1, 1, ty, 1});
        d[2] = option_index(knobs[2], std::vector<int64_t>{-1, 1, tx, 1});
        d[3] = option_index(knobs[3], std::vector<int64_t>{-1, rci});
        d[4] = option_index(knobs[4], std::vector<int64_t>{-1, whole_window ? w.kernel_h : 1});
        d[5] = option_index(knobs[5], std::vector<int64_t>{-1, whole_window ? w.kernel_w : 1});
        d[6] = option_index(knobs[6], int64_t{512});
        d[7] = option_index(knobs[7], int64_t{1});
        auto c = space.config_from_digits(d);
        if (c && space.is_valid(*c)) return *c;
      }
    }
    return *space.config_at(0);  // one thread, nothing tiled: always valid
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "f_block",     "f_vthread",    "f_thread",        "f_inner",     "y_block",
        "y_vthread",   "y_thread",     "y_inner",         "x_block",     "x_vthread",
        "x_thread",    "x_inner",      "rc_outer",        "rc_inner",    "ry_outer",
        "ry_inner",    "rx_outer",     "rx_inner",        "auto_unroll", "unroll_explicit",
        "threads",     "accumulators", "shared_bytes",    "blocks",      "outer_steps",
        "inner_steps", "fma_per_load", "warps_per_block", "tail_warp"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const Conv2dCudaSchedule s = conv2d_nchw_cuda_schedule(w, space, config);
    std::vector<float> v;
    util::append_split_features(v, s.f, s.y, s.x, s.rc, s.ry, s.rx);
    util::append_unroll_features(v, s.auto_unroll_max_step, s.unroll_explicit);
    const auto g = s.grid(w);
    const double threads = static_cast<double>(s.threads());
    const double fma_per_step =
        static_cast<double>(s.tile_f()) * s.tile_y() * s.tile_x() * s.rc[1] * s.ry[1] * s.rx[1];
    const double loads_per_step = s.input_tile_floats(w) + s.weight_tile_floats();
    util::append_launch_features(v, threads, s.accumulators(), s.shared_bytes(w),
                                 static_cast<double>(g[0]) * g[1] * g[2]);
    v.push_back(log_feature(static_cast<double>(s.rc[0]) * s.ry[0] * s.rx[0]));
    v.push_back(log_feature(static_cast<double>(s.rc[1]) * s.ry[1] * s.rx[1]));
    v.push_back(static_cast<float>(fma_per_step / loads_per_step));
    util::append_warp_features(v, threads);
    return v;
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const Conv2dCudaSchedule s = conv2d_nchw_cuda_schedule(w, space, config);
    const auto g = s.grid(w);
    return util::nchw_conv_signature(w, {w.out_channels, w.in_channels, w.kernel_h, w.kernel_w},
                                     g[0] * g[1] * g[2]);
  }

 private:
  static const Conv2dWorkload& workload(const Task& task) {
    return std::get<Conv2dWorkload>(task.workload);
  }
};

}  // namespace

ConfigSpace conv2d_nchw_cuda_space(const Conv2dWorkload& w) {
  std::vector<Knob> knobs;
  util::add_output_tile_knobs(knobs, w);
  knobs.push_back(make_split_knob("tile_rc", w.in_channels, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_ry", w.kernel_h, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_rx", w.kernel_w, 2, SplitPolicy::kFactors));
  util::add_unroll_knobs(knobs, 512);
  std::vector<Knob> captured = knobs;
  auto valid = [captured, w](const std::vector<int32_t>& d) {
    const Conv2dCudaSchedule s = decode(w, captured, d);
    const auto g = s.grid(w);  // (z, y, x)
    return fits_universal_limits(
        launch_usage({s.x[2], s.y[2], s.f[2]}, {g[2], g[1], g[0]}, s.shared_bytes(w)),
        s.accumulators());
  };
  return ConfigSpace("conv2d_nchw.cuda", std::move(knobs), valid);
}

Conv2dCudaSchedule conv2d_nchw_cuda_schedule(const Conv2dWorkload& w, const ConfigSpace& space,
                                             const Config& config) {
  return decode(w, space.knobs(), config.digits);
}

const Template& conv2d_nchw_cuda_template() {
  static const Conv2dNchwCudaTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
