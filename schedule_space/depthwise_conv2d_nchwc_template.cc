#include "schedule_space/depthwise_conv2d_nchwc_template.h"

#include <algorithm>

#include "schedule_space/layout.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::inner_factor;
using util::largest_divisor_at_most;
using util::log_feature;

constexpr char kName[] = "depthwise_conv2d_NCHWc.x86";

int64_t accumulators(int64_t reg_n, int64_t oc_bn, int64_t lanes) {
  return reg_n * ceil_div(oc_bn, lanes);
}

/// Accumulators a chosen row keeps in registers without spilling: the vector registers (32
/// with AVX-512's 16 lanes, else 16) less those the taps' weights and inputs take.
int64_t register_budget(int64_t lanes) { return lanes >= 16 ? kMaxAccumulators : 12; }

/// The widest register row of at most `widest` columns that divides OW and whose accumulators
/// stay in registers (the tuners may still measure wider, spilling rows: the space allows them).
int64_t widest_row(const Conv2dWorkload& w, int64_t oc_bn, int64_t lanes, int64_t widest) {
  for (int64_t n = std::min<int64_t>(w.out_width(), widest); n > 1; --n)
    if (w.out_width() % n == 0 && accumulators(n, oc_bn, lanes) <= register_budget(lanes)) return n;
  return 1;
}

ConfigSpace depthwise_space(const Conv2dWorkload& w, int64_t lanes) {
  std::vector<Knob> knobs;
  knobs.push_back(make_split_knob("tile_ic", w.in_channels, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_oc", w.out_channels, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_ow", w.out_width(), 2, SplitPolicy::kFactors, 64));
  knobs.push_back(make_other_knob("unroll_kw", {KnobValue(true), KnobValue(false)}));
  std::vector<Knob> captured = knobs;
  auto valid = [captured, lanes](const std::vector<int32_t>& d) {
    const int64_t oc_bn = inner_factor(captured[1].options[d[1]]);
    const int64_t reg_n = inner_factor(captured[2].options[d[2]]);
    return accumulators(reg_n, oc_bn, lanes) <= kMaxAccumulators;
  };
  return ConfigSpace(kName, std::move(knobs), valid);
}

/// The config of these factors, if the space has it and it is valid.
std::optional<Config> config_of(const ConfigSpace& space, int64_t ic_bn, int64_t oc_bn,
                                int64_t reg_n, bool unroll_kw) {
  const auto& knobs = space.knobs();
  std::vector<int32_t> digits{util::split_with_inner(knobs[0], ic_bn),
                              util::split_with_inner(knobs[1], oc_bn),
                              util::split_with_inner(knobs[2], reg_n), unroll_kw ? 0 : 1};
  for (int32_t d : digits)
    if (d < 0) return std::nullopt;
  auto c = space.config_from_digits(digits);
  if (!c || !space.is_valid(*c)) return std::nullopt;
  return *c;
}

class DepthwiseConv2dNCHWcTemplate final : public Template {
 public:
  std::string_view name() const override { return kName; }
  std::vector<std::string_view> aliases() const override { return {"depthwise_conv2d"}; }
  OperatorKind operator_kind() const override { return OperatorKind::kConv2d; }
  Status accepts(const Workload& w) const override {
    return depthwise_accepts(std::get<Conv2dWorkload>(w));
  }

  ConfigSpace config_space(const Task& task) const override {
    const int64_t lanes = task.target.vector_lanes;
    // Bound by its loads (each weight and input is used once per output row), not its FMAs.
    return util::offer_tiles_for(
        depthwise_space(workload(task), task.target.vector_lanes), task.target,
        util::TileBound::kMemory, [lanes](const ConfigSpace& space, const Config& c) {
          const int64_t oc_bn = inner_factor(space.value(c, "tile_oc"));
          const int64_t reg_n = inner_factor(space.value(c, "tile_ow"));
          return util::tile_with(accumulators(reg_n, oc_bn, lanes), ceil_div(oc_bn, lanes), reg_n);
        });
  }

  // AutoTVM's fallback blocks (oc_bn = largest divisor of OC <= lanes, ic_bn = largest divisor
  // of IC <= oc_bn), with rows of at most 8 columns and every tap unrolled: in compiled
  // networks that ran stride-1 layers up to 1.8x faster than AutoTVM's fallback row (the largest
  // divisor of OW <= 31, a loop over kw), whose accumulators spill with 16 vector registers
  // (docs/depthwise.md).
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const Conv2dWorkload& w = workload(task);
    const int64_t lanes = task.target.vector_lanes;
    const int64_t oc_bn = largest_divisor_at_most(w.out_channels, lanes);
    const int64_t ic_bn = largest_divisor_at_most(w.in_channels, oc_bn);
    auto c = config_of(space, ic_bn, oc_bn, widest_row(w, oc_bn, lanes, 8), true);
    TT_CHECK(c.has_value()) << "depthwise fallback outside its space";
    return *c;
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{"ic_bn",
                                                "oc_bn",
                                                "reg_n",
                                                "unroll_kw",
                                                "vectors",
                                                "accumulators",
                                                "full_vectors",
                                                "ow_tail",
                                                "parallel",
                                                "tiles_per_task",
                                                "taps",
                                                "blocks_differ",
                                                "input_tile_bytes",
                                                "weight_bytes",
                                                "stride"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const int64_t lanes = task.target.vector_lanes;
    const Conv2dWorkload& w = workload(task);
    const DepthwiseSchedule s = depthwise_conv2d_nchwc_schedule(space, config);
    const int64_t ow = w.out_width();
    const int64_t vectors = ceil_div(s.oc_bn, lanes);
    const int64_t acc = accumulators(s.reg_n, s.oc_bn, lanes);
    const int64_t taps = w.kernel_h * w.kernel_w;
    const int64_t in_cols = (s.reg_n - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w + 1;
    return {log_feature(s.ic_bn),
            log_feature(s.oc_bn),
            log_feature(s.reg_n),
            s.unroll_kw ? 1.0f : 0.0f,
            static_cast<float>(vectors),
            static_cast<float>(acc),
            s.oc_bn % lanes == 0 ? 1.0f : 0.0f,
            static_cast<float>(ow % s.reg_n) / static_cast<float>(s.reg_n),
            log_feature(w.batch * (w.out_channels / s.oc_bn) * w.out_height()),
            log_feature(ceil_div(ow, s.reg_n)),
            static_cast<float>(taps),
            s.ic_bn == s.oc_bn                                 ? 0.0f
            : s.ic_bn % s.oc_bn == 0 || s.oc_bn % s.ic_bn == 0 ? 1.0f
                                                               : 2.0f,
            log_feature(4.0 * w.kernel_h * in_cols * s.oc_bn),
            log_feature(4.0 * taps * s.oc_bn),
            static_cast<float>(w.stride_w)};
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const Conv2dWorkload& w = workload(task);
    const DepthwiseSchedule s = depthwise_conv2d_nchwc_schedule(space, config);
    return util::blocked_conv_signature(
        w, s.ic_bn, s.oc_bn, {w.out_channels / s.oc_bn, 1, w.kernel_h, w.kernel_w, 1, s.oc_bn},
        w.batch * (w.out_channels / s.oc_bn) * w.out_height());
  }

  Tensor pack_data(const KernelSignature& sig, const Tensor& data) const override {
    return pack_nchwc(data, sig.ic_block);
  }
  Tensor pack_weight(const KernelSignature& sig, const Tensor& weight) const override {
    return pack_oihwio(weight, 1, sig.oc_block);
  }
  Tensor output_to_plain(const KernelSignature&, const Tensor& out) const override {
    return unpack_nchwc(out);
  }
  Tensor output_from_plain(const KernelSignature& sig, const Tensor& plain) const override {
    return pack_nchwc(plain, sig.oc_block);
  }

  // The fallback's row and unrolled taps for the node's blocks.
  std::optional<Config> config_for_blocks(const Task& task, const ConfigSpace& space,
                                          int64_t ic_block, int64_t oc_block) const override {
    const Conv2dWorkload& w = workload(task);
    return config_of(space, ic_block, oc_block,
                     widest_row(w, oc_block, task.target.vector_lanes, 8), true);
  }

 private:
  static const Conv2dWorkload& workload(const Task& task) {
    return std::get<Conv2dWorkload>(task.workload);
  }
};

}  // namespace

Status depthwise_accepts(const Conv2dWorkload& w) {
  if (w.is_depthwise()) return ok_status();
  return invalid_argument(std::string(kName) +
                          " serves depthwise convolutions (groups = in_channels = out_channels);"
                          " this one has groups = " +
                          std::to_string(w.groups) + " (" + describe_workload(w) + ")");
}

DepthwiseSchedule depthwise_conv2d_nchwc_schedule(const ConfigSpace& space, const Config& config) {
  DepthwiseSchedule s;
  s.ic_bn = inner_factor(space.value(config, "tile_ic"));
  s.oc_bn = inner_factor(space.value(config, "tile_oc"));
  s.reg_n = inner_factor(space.value(config, "tile_ow"));
  s.unroll_kw = std::get<bool>(space.value(config, "unroll_kw"));
  return s;
}

const Template& depthwise_conv2d_nchwc_template() {
  static const DepthwiseConv2dNCHWcTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
