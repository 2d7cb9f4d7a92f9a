#pragma once
/// \file
/// Small pieces every template's file needs: reading split values, resolving a split's outer
/// part, default-config arithmetic, and the log scale of cost-model features. Internal to
/// schedule_space/ (the templates' .cc files).

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/cpu_model.h"
#include "schedule_space/knob.h"
#include "schedule_space/task.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space::util {

/// Whether a template's kernels are bound by their FMA pipes (a convolution's register tile
/// reuses each load many times) or may be bound by memory (a dense at batch 1 streams its
/// weights once, and its best tiles are narrow).
enum class TileBound { kFmaPipes, kMemory };

/// A register tile of `accumulators` vectors, `columns` of them (the inputs broadcast in turn)
/// sharing `weights` weight vectors per step. Its inner loop holds the accumulators, one
/// broadcast input, and the weights where more than one column reuses them (one column's
/// weights are each used once, and LLVM folds their loads into the FMAs). On Zen 3 (16 ymm) and
/// Ice Lake (32 zmm) LLVM 14 spills exactly the conv2d_NCHWc tiles this counts above the
/// registers (tests/compiler/register_tile_test.cc).
inline ConfigSpace::RegisterTile tile_with(int64_t accumulators, int64_t weights, int64_t columns) {
  return {accumulators, accumulators + (columns > 1 ? weights : 0) + 1};
}

/// The space, offering the register tiles the task's CPU suits (ConfigSpace::
/// offer_register_tiles): at most its vector registers, and, for FMA-bound kernels, at least
/// its FMA chains in accumulators. `tile(space, config)` is the template's RegisterTile of a
/// config.
template <typename TileFn>
ConfigSpace offer_tiles_for(ConfigSpace space, const Target& target, TileBound bound, TileFn tile) {
  const CpuModel cpu = cpu_model_of(target);
  const ConfigSpace plain = space;
  space.offer_register_tiles(
      [plain, tile](const std::vector<int32_t>& digits) {
        return tile(plain, Config{0, digits});
      },
      cpu.vector_registers, bound == TileBound::kFmaPipes ? cpu.fma_chains : 1);
  return space;
}

/// The factors of a split knob's value ([-1, f1, ...]).
inline const std::vector<int64_t>& split_sizes(const KnobValue& v) {
  return std::get<std::vector<int64_t>>(v);
}

/// A factors-policy split entity with its outer part resolved: {axis / (f1 * ...), f1, ...}.
template <size_t N>
std::array<int64_t, N> resolve_split(const std::vector<int64_t>& entity, int64_t axis) {
  std::array<int64_t, N> parts{};
  int64_t inner = 1;
  for (size_t i = 1; i < N; ++i) {
    parts[i] = entity[i];
    inner *= entity[i];
  }
  parts[0] = axis / inner;
  return parts;
}

inline int64_t largest_divisor_at_most(int64_t n, int64_t cap) {
  int64_t best = 1;
  for (int64_t d : divisors(n))
    if (d <= cap) best = d;
  return best;
}

/// The largest power of two dividing n, at most cap (AutoTVM's batch matmul fallback tiles).
inline int64_t largest_power_of_two_divisor_at_most(int64_t n, int64_t cap) {
  int64_t b = 1;
  while (b * 2 <= cap && n % (b * 2) == 0) b *= 2;
  return b;
}

/// The position of `value` among the knob's candidates; -1 when it is not one.
inline int option_index(const Knob& knob, const KnobValue& value) {
  for (size_t i = 0; i < knob.options.size(); ++i)
    if (knob.options[i] == value) return static_cast<int>(i);
  return -1;
}

/// The config of `digits` when every digit names a candidate and the config is valid; else the
/// first valid config of the space (index 0 when none is: the space's own fallback).
inline Config preferred_or_first_valid(const ConfigSpace& space,
                                       const std::vector<int32_t>& digits) {
  bool named = true;
  for (int32_t d : digits) named = named && d >= 0;
  if (named)
    if (auto c = space.config_from_digits(digits); c && space.is_valid(*c)) return *c;
  for (int64_t i = 0; i < space.size(); ++i)
    if (space.is_valid_index(i)) return *space.config_at(i);
  return *space.config_at(0);
}

/// The valid config of the highest `rank` (a template's preference: larger is better; a config
/// it ranks below zero is never chosen), the first valid config where it ranks none of them:
/// a default that stays near the preferred tiles when the target's registers or memory rule
/// them out, instead of the space's smallest.
template <typename RankFn>
Config best_ranked_valid(const ConfigSpace& space, RankFn rank) {
  std::optional<Config> best;
  double best_rank = -1;
  for (int64_t i = 0; i < space.size(); ++i) {
    if (!space.is_valid_index(i)) continue;
    Config c = *space.config_at(i);
    const double r = rank(c);
    if (r >= 0 && (!best || r > best_rank)) {
      best = std::move(c);
      best_rank = r;
    }
  }
  return best ? *best : preferred_or_first_valid(space, {});
}

/// The innermost factor of a split knob's value ([-1, ..., f] -> f): the block or tile a
/// template reads from it.
inline int64_t inner_factor(const KnobValue& v) { return split_sizes(v).back(); }

/// The position of the split candidate whose innermost factor is `factor`; -1 when none is.
inline int split_with_inner(const Knob& knob, int64_t factor) {
  for (size_t i = 0; i < knob.options.size(); ++i)
    if (inner_factor(knob.options[i]) == factor) return static_cast<int>(i);
  return -1;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Counts enter features as log2(1 + x), so that trees split on orders of magnitude.
inline float log_feature(double x) { return static_cast<float>(std::log2(1.0 + x)); }

/// AutoTVM's tiling of a CUDA convolution's output: tile_f, tile_y and tile_x, 4-way factor
/// splits (block, vthread, thread, inner) of the output channels, rows and columns.
inline void add_output_tile_knobs(std::vector<Knob>& knobs, const Conv2dWorkload& w) {
  knobs.push_back(make_split_knob("tile_f", w.out_channels, 4, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_y", w.out_height(), 4, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_x", w.out_width(), 4, SplitPolicy::kFactors));
}

/// AutoTVM's unroll knobs, last in its CUDA templates: auto_unroll_max_step over {0,
/// `middle_step`, 1500} (each template has its own middle value) and unroll_explicit {0, 1}.
inline void add_unroll_knobs(std::vector<Knob>& knobs, int64_t middle_step) {
  knobs.push_back(
      make_other_knob("auto_unroll_max_step", {int64_t{0}, middle_step, int64_t{1500}}));
  knobs.push_back(make_other_knob("unroll_explicit", {int64_t{0}, int64_t{1}}));
}

/// Appends log_feature of every factor of each split, in order: the tiles of a CUDA template's
/// split knobs (block, vthread, thread, inner; or outer, inner).
template <typename... Splits>
void append_split_features(std::vector<float>& features, const Splits&... splits) {
  (..., [&] {
    for (int64_t part : splits) features.push_back(log_feature(static_cast<double>(part)));
  }());
}

/// Appends AutoTVM's unroll knobs as features: auto_unroll_max_step on the log scale,
/// unroll_explicit as 1 or 0.
inline void append_unroll_features(std::vector<float>& features, int64_t auto_unroll_max_step,
                                   bool unroll_explicit) {
  features.push_back(log_feature(static_cast<double>(auto_unroll_max_step)));
  features.push_back(unroll_explicit ? 1.0f : 0.0f);
}

/// Appends the shape of a CUDA launch on the log scale: threads per block, accumulators per
/// thread, shared-memory bytes per block, blocks.
inline void append_launch_features(std::vector<float>& features, double threads,
                                   double accumulators, double shared_bytes, double blocks) {
  for (double x : {threads, accumulators, shared_bytes, blocks}) features.push_back(log_feature(x));
}

/// Appends the features every CUDA template ends with: warps per block, and 1 when the last warp
/// is partial (threads not a multiple of 32), 0 when not.
inline void append_warp_features(std::vector<float>& features, double threads_per_block) {
  features.push_back(static_cast<float>(std::ceil(threads_per_block / 32.0)));
  features.push_back(static_cast<int64_t>(threads_per_block) % 32 == 0 ? 0.0f : 1.0f);
}

/// The signature of a convolution kernel over NCHW data and output whose weight has
/// `weight_shape` (OIHW, or a template's own transform of it) and whose parallel loop is its
/// `blocks` thread blocks.
inline KernelSignature nchw_conv_signature(const Conv2dWorkload& w,
                                           std::vector<int64_t> weight_shape, int64_t blocks) {
  KernelSignature sig;
  sig.data_shape = {w.batch, w.in_channels, w.in_height, w.in_width};
  sig.weight_shape = std::move(weight_shape);
  sig.out_shape = {w.batch, w.out_channels, w.out_height(), w.out_width()};
  sig.parallel_extent = blocks;
  return sig;
}

/// The signature of a convolution kernel over NCHW[ic_bn]c data and NCHW[oc_bn]c output whose
/// weight has `weight_shape` (OIHW[ic_bn]i[oc_bn]o for the direct templates) and whose parallel
/// loop has `parallel_extent` iterations.
inline KernelSignature blocked_conv_signature(const Conv2dWorkload& w, int64_t ic_bn, int64_t oc_bn,
                                              std::vector<int64_t> weight_shape,
                                              int64_t parallel_extent) {
  KernelSignature sig;
  sig.data_shape = {w.batch, w.in_channels / ic_bn, w.in_height, w.in_width, ic_bn};
  sig.weight_shape = std::move(weight_shape);
  sig.out_shape = {w.batch, w.out_channels / oc_bn, w.out_height(), w.out_width(), oc_bn};
  sig.parallel_extent = parallel_extent;
  sig.ic_block = ic_bn;
  sig.oc_block = oc_bn;
  return sig;
}

/// OIHW[ic_bn]i[oc_bn]o: the weight of the direct blocked convolutions.
inline std::vector<int64_t> oihwio_shape(const Conv2dWorkload& w, int64_t ic_bn, int64_t oc_bn) {
  return {w.out_channels / oc_bn, w.in_channels / ic_bn, w.kernel_h, w.kernel_w, ic_bn, oc_bn};
}

}  // namespace tensortune::schedule_space::util
