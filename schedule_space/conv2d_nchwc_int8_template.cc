#include "schedule_space/conv2d_nchwc_int8_template.h"

#include <algorithm>

#include "schedule_space/layout.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::inner_factor;
using util::log_feature;

bool is_1x1(const Conv2dWorkload& w) { return w.kernel_h == 1 && w.kernel_w == 1; }

Knob keep_inner(Knob knob, int64_t multiple_of) {
  std::erase_if(knob.options,
                [&](const KnobValue& v) { return inner_factor(v) % multiple_of != 0; });
  return knob;
}

// Vector registers the register tile holds: without VNNI, full-range weights keep two partial
// sums per channel (`vpmaddwd` pairs); 7-bit weights' byte products fold into one.
int64_t accumulators(const Conv2dInt8Schedule& s, int64_t lanes, Precision p) {
  const int64_t unreduced = p == Precision::kUInt8Int7 ? 1 : 2;
  return s.reg_h * s.reg_n * unreduced * ceil_div(s.oc_bn, lanes);
}

// Output-channel blocks are multiples of 16 (AutoTVM's literal: the lanes of one VNNI
// accumulator), or of 8 when the channels are not a multiple of 16 (mobilenet_v2's 24-channel
// layers, which AutoTVM pads first; their kernels accumulate 8 channels per vector, the AVX2
// forms' width, on every CPU).
int64_t channel_block_multiple(const Conv2dWorkload& w) {
  return w.out_channels % 16 == 0 ? 16 : 8;
}

const Conv2dWorkload& workload_of(const Task& task) {
  return std::get<Conv2dWorkload>(task.workload);
}

}  // namespace

bool runs_on_amx_tiles(const Conv2dInt8Schedule& s) {
  return s.oc_bn % 16 == 0 && s.ic_bn >= 16 && s.reg_h * s.reg_n >= 2;
}

ConfigSpace conv2d_nchwc_int8_space(const Conv2dWorkload& w, int vector_lanes) {
  std::vector<Knob> knobs;
  knobs.push_back(
      keep_inner(make_split_knob("tile_ic", w.in_channels, 2, SplitPolicy::kFactors), 4));
  knobs.push_back(keep_inner(make_split_knob("tile_oc", w.out_channels, 2, SplitPolicy::kFactors),
                             channel_block_multiple(w)));
  knobs.push_back(make_split_knob("tile_ow", w.out_width(), 2, SplitPolicy::kFactors, 64));
  if (is_1x1(w)) {
    std::vector<KnobValue> rows{KnobValue(int64_t{1})};
    if (w.out_height() > 1) rows.emplace_back(int64_t{2});
    knobs.push_back(make_other_knob("tile_oh", rows));
  } else {
    knobs.push_back(make_other_knob("unroll_kw", {KnobValue(true), KnobValue(false)}));
  }
  const int64_t lanes = vector_lanes;
  std::vector<Knob> captured = knobs;
  const bool one_by_one = is_1x1(w);
  const Precision precision = w.precision;
  auto valid = [captured, lanes, one_by_one, precision](const std::vector<int32_t>& d) {
    Conv2dInt8Schedule s;
    s.oc_bn = inner_factor(captured[1].options[d[1]]);
    s.reg_n = inner_factor(captured[2].options[d[2]]);
    s.reg_h = one_by_one ? std::get<int64_t>(captured[3].options[d[3]]) : 1;
    return accumulators(s, lanes, precision) <= kMaxAccumulators;
  };
  return ConfigSpace("conv2d_NCHWc_int8.x86", std::move(knobs), valid);
}

Conv2dInt8Schedule conv2d_nchwc_int8_schedule(const ConfigSpace& space, const Config& config) {
  Conv2dInt8Schedule s;
  s.ic_bn = inner_factor(space.value(config, "tile_ic"));
  s.oc_bn = inner_factor(space.value(config, "tile_oc"));
  s.reg_n = inner_factor(space.value(config, "tile_ow"));
  if (space.knob_position("tile_oh") >= 0)
    s.reg_h = std::get<int64_t>(space.value(config, "tile_oh"));
  if (space.knob_position("unroll_kw") >= 0)
    s.unroll_kw = std::get<bool>(space.value(config, "unroll_kw"));
  return s;
}

Config conv2d_nchwc_int8_default(const ConfigSpace& space, const Conv2dWorkload& w,
                                 int vector_lanes) {
  const auto& knobs = space.knobs();
  int64_t ic_bn = 4;
  for (int64_t c = 16; c >= 4; c -= 4)
    if (w.in_channels % c == 0) {
      ic_bn = c;
      break;
    }
  Conv2dInt8Schedule s{ic_bn, channel_block_multiple(w), 1, 1, false};
  const int64_t ow = w.out_width(), oh = w.out_height();
  const bool one_by_one = is_1x1(w);
  if (one_by_one) {
    // AutoTVM: the widest divisor of OW, then the most rows, whose product is below 32.
    for (int64_t n = std::min<int64_t>(ow, 64); n >= 1 && s.reg_n == 1; --n) {
      if (ow % n != 0) continue;
      for (int64_t r = std::min<int64_t>(oh, 2); r >= 1; --r)
        if (oh % r == 0 && n * r < 32) {
          s.reg_n = n;
          s.reg_h = r;
          break;
        }
    }
  } else {
    s.reg_n = util::largest_divisor_at_most(ow, 31);
  }
  // Within the register budget (AutoTVM's fallback knows no such limit).
  while (accumulators(s, vector_lanes, w.precision) > kMaxAccumulators) {
    if (s.reg_h > 1) {
      s.reg_h = 1;
      continue;
    }
    s.reg_n = util::largest_divisor_at_most(ow, s.reg_n - 1);
  }
  std::vector<int32_t> digits(knobs.size(), 0);
  digits[0] = util::split_with_inner(knobs[0], s.ic_bn);
  digits[1] = util::split_with_inner(knobs[1], s.oc_bn);
  digits[2] = util::split_with_inner(knobs[2], s.reg_n);
  if (one_by_one)
    digits[3] = s.reg_h == 2 ? 1 : 0;
  else
    digits[3] = 1;  // unroll_kw = false
  return util::preferred_or_first_valid(space, digits);
}

Config conv2d_nchwc_int8_amx_default(const ConfigSpace& space, const Conv2dWorkload& w,
                                     int vector_lanes) {
  int64_t ic_bn = 0;
  for (int64_t d : divisors(w.in_channels))
    if (d % 16 == 0 && d <= 256) ic_bn = d;
  if (ic_bn == 0) return conv2d_nchwc_int8_default(space, w, vector_lanes);
  const auto& knobs = space.knobs();
  const bool one_by_one = is_1x1(w);
  // The widest row (then two rows of a 1x1 kernel where that is still narrow) the template's
  // register budget takes.
  std::vector<int32_t> best;
  for (int64_t reg_n = std::min<int64_t>(w.out_width(), 16); reg_n >= 1 && best.empty(); --reg_n) {
    if (w.out_width() % reg_n != 0) continue;
    for (int64_t rows : {int64_t{2}, int64_t{1}}) {
      if (rows == 2 && !(one_by_one && reg_n < 8 && w.out_height() > 1)) continue;
      std::vector<int32_t> digits(knobs.size(), 0);
      digits[0] = util::split_with_inner(knobs[0], ic_bn);
      digits[1] = util::split_with_inner(knobs[1], channel_block_multiple(w));
      digits[2] = util::split_with_inner(knobs[2], reg_n);
      digits[3] = one_by_one ? (rows == 2 ? 1 : 0) : 1;  // unroll_kw = false
      if (auto c = space.config_from_digits(digits); c && space.is_valid(*c)) {
        best = digits;
        break;
      }
    }
  }
  if (best.empty()) return conv2d_nchwc_int8_default(space, w, vector_lanes);
  return util::preferred_or_first_valid(space, best);
}

namespace {

class Conv2dNCHWcInt8Template final : public Template {
 public:
  std::string_view name() const override { return "conv2d_NCHWc_int8.x86"; }
  std::vector<std::string_view> aliases() const override { return {"conv2d_int8"}; }
  OperatorKind operator_kind() const override { return OperatorKind::kConv2d; }
  Precision precision() const override { return Precision::kUInt8Int8; }
  // Its OIHW[x/4]i[y]o4i weights are packed at compile time from the node's constant.
  bool needs_constant_weight() const override { return true; }

  Status accepts(const Workload& wl) const override {
    TT_RETURN_IF_ERROR(Template::accepts(wl));
    const auto& w = std::get<Conv2dWorkload>(wl);
    if (w.in_channels % 4 != 0 || w.out_channels % 8 != 0)
      return invalid_argument(std::string(name()) +
                              " needs input channels divisible by 4 and output channels by 8; "
                              "this one has " +
                              std::to_string(w.in_channels) + " and " +
                              std::to_string(w.out_channels) + " (" + describe_workload(wl) + ")");
    return ok_status();
  }

  ConfigSpace config_space(const Task& task) const override {
    const int64_t lanes = task.target.vector_lanes;
    const Precision precision = workload_of(task).precision;
    ConfigSpace space = conv2d_nchwc_int8_space(workload_of(task), task.target.vector_lanes);
    if (cpu_model_of(task.target).amx_int8) {
      // On AMX tiles a step of 64 input channels fills an instruction (ic_bn % 64 == 0), and
      // a kernel wider than 1x1 wants border tiles of 8 pixels or more (interior tiles run in
      // groups whatever their width): offer the configs that run on the tiles with the most of
      // both that the workload allows.
      const ConfigSpace plain = space;
      const bool one_by_one = is_1x1(workload_of(task));
      space.offer_register_tiles(
          [plain, one_by_one](const std::vector<int32_t>& digits) {
            const Conv2dInt8Schedule s = conv2d_nchwc_int8_schedule(plain, Config{0, digits});
            if (!runs_on_amx_tiles(s)) return ConfigSpace::RegisterTile{0, 0};
            const int64_t score = 1 + (s.ic_bn % 64 == 0) + (one_by_one || s.reg_h * s.reg_n >= 8);
            return ConfigSpace::RegisterTile{score, 0};
          },
          /*registers=*/1, /*accumulators=*/3);
      return space;
    }
    return util::offer_tiles_for(
        std::move(space), task.target, util::TileBound::kFmaPipes,
        [lanes, precision](const ConfigSpace& space, const Config& c) {
          const Conv2dInt8Schedule s = conv2d_nchwc_int8_schedule(space, c);
          return util::tile_with(accumulators(s, lanes, precision), ceil_div(s.oc_bn, lanes),
                                 s.reg_h * s.reg_n);
        });
  }
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    if (cpu_model_of(task.target).amx_int8)
      return conv2d_nchwc_int8_amx_default(space, workload_of(task), task.target.vector_lanes);
    return conv2d_nchwc_int8_default(space, workload_of(task), task.target.vector_lanes);
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "ic_bn",        "oc_bn",   "reg_n",    "reg_h",     "unroll_kw",        "vectors",
        "accumulators", "ow_tail", "parallel", "reduction", "input_tile_bytes", "weight_bytes",
        "macs_per_load"};
    return names;
  }
  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const int64_t lanes = task.target.vector_lanes;
    const Conv2dWorkload& w = workload_of(task);
    const Conv2dInt8Schedule s = conv2d_nchwc_int8_schedule(space, config);
    const int64_t vectors = ceil_div(s.oc_bn, lanes);
    const int64_t acc = accumulators(s, lanes, w.precision);
    const int64_t parallel =
        w.batch * (w.out_channels / s.oc_bn) * ceil_div(w.out_height(), s.reg_h);
    const int64_t in_cols = (s.reg_n - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w + 1;
    return {log_feature(s.ic_bn),
            log_feature(s.oc_bn),
            log_feature(s.reg_n),
            static_cast<float>(s.reg_h),
            s.unroll_kw ? 1.0f : 0.0f,
            static_cast<float>(vectors),
            static_cast<float>(acc),
            static_cast<float>(w.out_width() % s.reg_n) / static_cast<float>(s.reg_n),
            log_feature(parallel),
            log_feature(w.in_channels * w.kernel_h * w.kernel_w),
            log_feature(1.0 * s.reg_h * in_cols * s.ic_bn),
            log_feature(1.0 * w.in_channels * w.kernel_h * w.kernel_w * s.oc_bn),
            static_cast<float>(acc) / static_cast<float>(vectors + s.reg_h * s.reg_n)};
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const Conv2dWorkload& w = workload_of(task);
    const Conv2dInt8Schedule s = conv2d_nchwc_int8_schedule(space, config);
    // OIHW[ic_bn/4]i[oc_bn]o4i: four input channels summed per lane.
    return util::blocked_conv_signature(
        w, s.ic_bn, s.oc_bn,
        {w.out_channels / s.oc_bn, w.in_channels / s.ic_bn, w.kernel_h, w.kernel_w, s.ic_bn / 4,
         s.oc_bn, 4},
        w.batch * (w.out_channels / s.oc_bn) * ceil_div(w.out_height(), s.reg_h));
  }

  Tensor pack_data(const KernelSignature& sig, const Tensor& data) const override {
    return pack_nchwc(data, sig.ic_block);  // uint8 stays uint8
  }
  // OIHW int8 -> OIHW[x/4]i[y]o4i int8.
  Tensor pack_weight(const KernelSignature& sig, const Tensor& weight) const override {
    const int64_t oc = weight.shape[0], ic = weight.shape[1], kh = weight.shape[2],
                  kw = weight.shape[3];
    const int64_t x = sig.ic_block, y = sig.oc_block;
    Tensor out = Tensor::zeros(DType::kInt8, sig.weight_shape);
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t i = 0; i < ic; ++i)
        for (int64_t r = 0; r < kh * kw; ++r) {
          const int64_t block = ((o / y) * (ic / x) + i / x) * kh * kw + r;
          const int64_t inner = ((i % x) / 4 * y + o % y) * 4 + i % 4;
          out.i64[block * x * y + inner] = weight.i64[(o * ic + i) * kh * kw + r];
        }
    return out;
  }
  Tensor output_to_plain(const KernelSignature&, const Tensor& out) const override {
    return unpack_nchwc(out);
  }
  Tensor output_from_plain(const KernelSignature& sig, const Tensor& plain) const override {
    return pack_nchwc(plain, sig.oc_block);
  }
};

}  // namespace

const Template& conv2d_nchwc_int8_template() {
  static const Conv2dNCHWcInt8Template instance;
  return instance;
}

}  // namespace tensortune::schedule_space
