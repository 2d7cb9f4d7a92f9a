#include "schedule_space/conv2d_nchwc_template.h"

#include <algorithm>

namespace tensortune::schedule_space {
namespace {

int64_t inner(const KnobValue& v) { return std::get<std::vector<int64_t>>(v).back(); }

int find_split(const Knob& k, int64_t inner_factor) {
  for (size_t i = 0; i < k.options.size(); ++i)
    if (inner(k.options[i]) == inner_factor) return static_cast<int>(i);
  return 0;
}

int64_t largest_divisor_at_most(int64_t n, int64_t cap) {
  int64_t best = 1;
  for (int64_t d : divisors(n))
    if (d <= cap) best = d;
  return best;
}

bool is_1x1(const Conv2dWorkload& w) { return w.kernel_h == 1 && w.kernel_w == 1; }

}  // namespace

ConfigSpace conv2d_nchwc_space(const Conv2dWorkload& w, int vector_lanes) {
  std::vector<Knob> knobs;
  knobs.push_back(make_split_knob("tile_ic", w.in_channels, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_oc", w.out_channels, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_ow", w.out_width(), 2, SplitPolicy::kVerbose, 64));
  if (!is_1x1(w)) knobs.push_back(make_other_knob("unroll_kw", {KnobValue(true), KnobValue(false)}));
  std::vector<KnobValue> rows;
  for (int64_t r = 1; r <= std::min<int64_t>(4, w.out_height()); ++r) rows.emplace_back(r);
  knobs.push_back(make_other_knob("tile_oh", rows));
  knobs.push_back(make_other_knob("oc_inner", {KnobValue(false), KnobValue(true)}));

  const int64_t lanes = vector_lanes;
  const int64_t oh = w.out_height();
  // Positions are fixed above: 0 ic, 1 oc, 2 ow, then unroll_kw (non-1x1), tile_oh, oc_inner.
  const size_t oh_pos = knobs.size() - 2;
  std::vector<Knob> captured = knobs;
  auto valid = [captured, lanes, oh, oh_pos](const std::vector<int32_t>& d) {
    const int64_t oc_bn = inner(captured[1].options[d[1]]);
    const int64_t reg_n = inner(captured[2].options[d[2]]);
    const int64_t reg_h = std::get<int64_t>(captured[oh_pos].options[d[oh_pos]]);
    const int64_t vectors = (oc_bn + lanes - 1) / lanes;
    return reg_h <= oh && reg_h * reg_n * vectors <= kMaxAccumulators;
  };
  return ConfigSpace("conv2d_NCHWc.x86", std::move(knobs), valid);
}

Conv2dSchedule conv2d_nchwc_schedule(const ConfigSpace& space, const Config& config) {
  Conv2dSchedule s;
  s.ic_bn = inner(space.value(config, "tile_ic"));
  s.oc_bn = inner(space.value(config, "tile_oc"));
  s.reg_n = inner(space.value(config, "tile_ow"));
  s.reg_h = std::get<int64_t>(space.value(config, "tile_oh"));
  s.oc_inner = std::get<bool>(space.value(config, "oc_inner"));
  if (space.knob_position("unroll_kw") >= 0) s.unroll_kw = std::get<bool>(space.value(config, "unroll_kw"));
  return s;
}

Config conv2d_nchwc_default(const ConfigSpace& space, const Conv2dWorkload& w, int vector_lanes) {
  const auto& knobs = space.knobs();
  const int64_t oc_bn = largest_divisor_at_most(w.out_channels, vector_lanes);
  const int64_t ic_bn = largest_divisor_at_most(w.in_channels, oc_bn);
  const int64_t vectors = (oc_bn + vector_lanes - 1) / vector_lanes;
  // AutoTVM caps reg_n at 31; we also keep the tile within the register budget so that the
  // fallback is always a valid config.
  const int64_t reg_n = largest_divisor_at_most(w.out_width(), std::min<int64_t>(31, kMaxAccumulators / vectors));
  std::vector<int32_t> digits(knobs.size(), 0);
  digits[0] = find_split(knobs[0], ic_bn);
  digits[1] = find_split(knobs[1], oc_bn);
  digits[2] = find_split(knobs[2], reg_n);
  const int kw = space.knob_position("unroll_kw");
  if (kw >= 0) digits[kw] = 1;  // false
  auto c = space.config_from_digits(digits);
  TT_CHECK(c.has_value()) << c.error().message;
  return *c;
}

}  // namespace tensortune::schedule_space
