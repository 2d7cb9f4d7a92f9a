// conv2d_NCHWc.cuda: the CPU path's blocked layouts on the GPU (conv2d_cuda_template.h).
#include <cmath>

#include "schedule_space/conv2d_cuda_template.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/layout.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::largest_divisor_at_most;
using util::log_feature;
using util::option_index;
using util::preferred_or_first_valid;
using util::resolve_split;
using util::split_sizes;

// Knob positions.
enum { kIc, kOc, kF, kY, kX, kRc, kUnrollKw };

// The split axes of tile_f and tile_rc depend on the blocks: they are split over the largest
// possible count (OC and IC channels) and read as counts of blocks; a config whose block
// count does not divide is invalid.
Conv2dNchwcCudaSchedule decode(const Conv2dWorkload& w, const std::vector<Knob>& knobs,
                               const std::vector<int32_t>& d, bool* divides) {
  Conv2dNchwcCudaSchedule s;
  s.ic_bn = split_sizes(knobs[kIc].options[d[kIc]])[1];
  s.oc_bn = split_sizes(knobs[kOc].options[d[kOc]])[1];
  const int64_t oc_blocks = w.out_channels / s.oc_bn, ic_blocks = w.in_channels / s.ic_bn;
  const int64_t ft = split_sizes(knobs[kF].options[d[kF]])[1];
  const int64_t rci = split_sizes(knobs[kRc].options[d[kRc]])[1];
  *divides = oc_blocks % ft == 0 && ic_blocks % rci == 0;
  s.f = {oc_blocks / ft, ft};
  s.rc = {ic_blocks / rci, rci};
  s.y = resolve_split<3>(split_sizes(knobs[kY].options[d[kY]]), w.out_height());
  s.x = resolve_split<3>(split_sizes(knobs[kX].options[d[kX]]), w.out_width());
  s.unroll_kw = std::get<int64_t>(knobs[kUnrollKw].options[d[kUnrollKw]]) != 0;
  return s;
}

class Conv2dNchwcCudaTemplate final : public Template {
 public:
  std::string_view name() const override { return "conv2d_NCHWc.cuda"; }
  std::string_view backend() const override { return "cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kConv2d; }

  ConfigSpace config_space(const Task& task) const override {
    return conv2d_nchwc_cuda_space(workload(task));
  }

  // Blocks of 8 input and 16 output channels where they divide, 4 channel blocks x 4 x 8
  // pixels of threads, one input block per step; shrunk until valid.
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const Conv2dWorkload& w = workload(task);
    const auto& knobs = space.knobs();
    const int64_t x = largest_divisor_at_most(w.in_channels, 8);
    const int64_t y = largest_divisor_at_most(w.out_channels, 16);
    const int64_t tf = largest_divisor_at_most(w.out_channels / y, 4);
    const int64_t ty = largest_divisor_at_most(w.out_height(), 4);
    const int64_t tx = largest_divisor_at_most(w.out_width(), 8);
    std::vector<int32_t> d(knobs.size(), 0);
    d[kIc] = option_index(knobs[kIc], std::vector<int64_t>{-1, x});
    d[kOc] = option_index(knobs[kOc], std::vector<int64_t>{-1, y});
    d[kF] = option_index(knobs[kF], std::vector<int64_t>{-1, tf});
    d[kY] = option_index(knobs[kY], std::vector<int64_t>{-1, ty, 1});
    d[kX] = option_index(knobs[kX], std::vector<int64_t>{-1, tx, 1});
    d[kRc] = 0;
    d[kUnrollKw] = 1;
    return preferred_or_first_valid(space, d);
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "ic_bn",     "oc_bn",   "f_block",  "f_thread",     "y_block",      "y_thread",
        "y_inner",   "x_block", "x_thread", "x_inner",      "rc_outer",     "rc_inner",
        "unroll_kw", "threads", "blocks",   "accumulators", "shared_bytes", "tail_warp"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const Conv2dNchwcCudaSchedule s = conv2d_nchwc_cuda_schedule(w, space, config);
    const auto g = s.grid(w);
    return {log_feature(s.ic_bn),
            log_feature(s.oc_bn),
            log_feature(s.f[0]),
            log_feature(s.f[1]),
            log_feature(s.y[0]),
            log_feature(s.y[1]),
            log_feature(s.y[2]),
            log_feature(s.x[0]),
            log_feature(s.x[1]),
            log_feature(s.x[2]),
            log_feature(s.rc[0]),
            log_feature(s.rc[1]),
            s.unroll_kw ? 1.0f : 0.0f,
            log_feature(s.threads()),
            log_feature(static_cast<double>(g[0]) * g[1] * g[2]),
            log_feature(s.accumulators()),
            log_feature(s.shared_bytes(w)),
            s.threads() % 32 == 0 ? 0.0f : 1.0f};
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const Conv2dNchwcCudaSchedule s = conv2d_nchwc_cuda_schedule(w, space, config);
    const auto g = s.grid(w);
    return util::blocked_conv_signature(
        w, s.ic_bn, s.oc_bn, util::oihwio_shape(w, s.ic_bn, s.oc_bn), g[0] * g[1] * g[2]);
  }

  Tensor pack_data(const KernelSignature& sig, const Tensor& data) const override {
    return pack_nchwc(data, sig.ic_block);
  }
  Tensor pack_weight(const KernelSignature& sig, const Tensor& weight) const override {
    return pack_oihwio(weight, sig.ic_block, sig.oc_block);
  }
  // Networks run it only in the blocked layout that `compile --gpu-layout nchwc` asks for;
  // AutoTVM's CUDA strategy tunes conv2d_nchw.cuda.
  bool extracted_for(const Workload&) const override { return false; }
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

ConfigSpace conv2d_nchwc_cuda_space(const Conv2dWorkload& w) {
  std::vector<Knob> knobs;
  knobs.push_back(make_split_knob("tile_ic", w.in_channels, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_oc", w.out_channels, 2, SplitPolicy::kFactors, 64));
  knobs.push_back(make_split_knob("tile_f", w.out_channels, 2, SplitPolicy::kFactors, 64));
  knobs.push_back(make_split_knob("tile_y", w.out_height(), 3, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_x", w.out_width(), 3, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_rc", w.in_channels, 2, SplitPolicy::kFactors, 16));
  knobs.push_back(make_other_knob("unroll_kw", {int64_t{0}, int64_t{1}}));
  std::vector<Knob> captured = knobs;
  auto valid = [captured, w](const std::vector<int32_t>& d) {
    bool divides = false;
    const Conv2dNchwcCudaSchedule s = decode(w, captured, d, &divides);
    const auto g = s.grid(w);  // (z, y, x)
    return divides && fits_universal_limits(launch_usage({s.x[1], s.y[1], s.f[1]},
                                                         {g[2], g[1], g[0]}, s.shared_bytes(w)),
                                            s.accumulators());
  };
  return ConfigSpace("conv2d_NCHWc.cuda", std::move(knobs), valid);
}

Conv2dNchwcCudaSchedule conv2d_nchwc_cuda_schedule(const Conv2dWorkload& w,
                                                   const ConfigSpace& space, const Config& config) {
  bool divides = false;
  return decode(w, space.knobs(), config.digits, &divides);
}

const Template& conv2d_nchwc_cuda_template() {
  static const Conv2dNchwcCudaTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
