#pragma once
/// \file
/// The x86 conv2d_NCHWc template. Data NCHW[x]c, kernel OIHW[x]i[y]o, output NCHW[y]c with
/// x = ic_bn, y = oc_bn.
///
/// Knobs, in index order (AutoTVM's first, so that its logs map in by entity):
///   tile_ic   split [-1, ic_bn], divisors of IC
///   tile_oc   split [-1, oc_bn], divisors of OC; the oc_bn axis is the vectorised one
///   tile_ow   split [-1, reg_n], divisors of OW and powers of two, reg_n <= 64
///   unroll_kw (kernels wider than 1) true/false: kw innermost and unrolled, or kw outside
///             the ic_block loop
///   tile_oh   rows of the register tile: 1..4 (AutoTVM has [1, 2] for 1x1 kernels only;
///             ours extends it to every kernel, candidate 0 is AutoTVM's behaviour)
///   oc_inner  order of the parallel loop: false = (n, oc_chunk, oh_tile) as AutoTVM, so each
///             output-channel chunk streams the whole input; true = (n, oh_tile, oc_chunk), so
///             an input row tile stays in cache while every chunk of weights passes over it
///             (pays off when the input is large against the weights, e.g. strided 1x1)
///   split_reduction  false = each register tile sums over every input channel at once, as
///             AutoTVM; true = the sum runs in slices of input channels whose weights fit in
///             L1 (kReductionSliceBytes), each slice passing over several row tiles whose partial
///             sums the task keeps on its stack (see ReductionSlicing). Pays off where a chunk's
///             weights are far larger than L1 and few positions share them (1x1 convolutions of
///             many channels at 14x14 and 7x7): each weight is read once from memory and then
///             used by every position of the task from L1. Valid only where it splits, and
///             where one row of register tiles holds at most kPartialSumBytes of sums.
///   prefetch_weights  (weights of at least kPrefetchWeightBytes only: those a network reads
///             from memory) false = loads only, as AutoTVM; true = each weight load also
///             prefetches (into L2) the weights one input-channel chunk ahead. Cold, it ran
///             resnet's 512-channel layers 6-12% faster and one of them 19% slower: the tuner's
///             choice.
/// A config is valid when its register tile (tile_oh * reg_n * ceil(oc_bn / lanes) vector
/// accumulators) fits in kMaxAccumulators registers and tile_oh <= OH.

#include <cstdint>
#include <optional>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template object (registered in template_registry.cc).
const Template& conv2d_nchwc_template();

/// A config of the direct template, decoded: its layout blocks and register tile.
struct Conv2dSchedule {
  int64_t ic_bn = 1;
  int64_t oc_bn = 1;
  int64_t reg_n = 1;  ///< output columns per register tile
  int64_t reg_h = 1;  ///< output rows per register tile
  bool unroll_kw = false;
  bool oc_inner =
      false;  ///< parallel loop order (n, oh_tile, oc_chunk) instead of (n, oc_chunk, oh_tile)
  bool split_reduction = false;
  bool prefetch_weights = false;
};

/// Bytes of weights one reduction slice may hold: half of a 32 KiB L1 data cache, the other half
/// left to the input rows and partial sums of the tile being computed.
inline constexpr int64_t kReductionSliceBytes = 16 * 1024;
/// Weights below this many bytes have no prefetch_weights knob: in the caches a network leaves
/// them in, 2.4 MB layers gained nothing; 4-9.4 MB ones 6-12%.
inline constexpr int64_t kPrefetchWeightBytes = 4 * 1024 * 1024;
/// Bytes of partial sums a task of a split reduction keeps on its stack, at most.
inline constexpr int64_t kPartialSumBytes = 32 * 1024;
/// Parallel tasks a split reduction keeps where the rows allow it, so that a pool of threads
/// still shares the work evenly.
inline constexpr int64_t kSplitReductionMinTasks = 16;

/// How a schedule runs its reduction and splits its parallel loop.
struct ReductionSlicing {
  int64_t chunks_per_slice = 1;    ///< input-channel chunks (of ic_bn) per slice
  int64_t slices = 1;              ///< 1 unless split_reduction
  int64_t row_tiles_per_task = 1;  ///< register-tile rows a task computes (1 unless split)
  int64_t row_groups = 1;          ///< ceil(row tiles / row_tiles_per_task)
  int64_t tasks = 1;               ///< the parallel extent: batch * oc chunks * row_groups
};
ReductionSlicing reduction_slicing(const Conv2dWorkload& w, const Conv2dSchedule& s);
/// Input-channel chunks one reduction slice of these blocks holds (>= 1).
int64_t reduction_slice_chunks(const Conv2dWorkload& w, int64_t ic_bn, int64_t oc_bn);

ConfigSpace conv2d_nchwc_space(const Conv2dWorkload& w, int vector_lanes);
Conv2dSchedule conv2d_nchwc_schedule(const ConfigSpace& space, const Config& config);
/// The fallback, AutoTVM's rule with two changes: oc_bn = largest divisor of OC <= 2 x lanes
/// (AutoTVM's: <= lanes), ic_bn = largest divisor of IC <= oc_bn, reg_n = largest divisor of OW
/// <= 31 whose row fits `vector_registers` (the CPU model's: 16 on AVX2, where AutoTVM's row
/// spills), unroll_kw = false, one row, and the reduction split into L1-sized slices
/// (split_reduction) where that is valid (AutoTVM's has no such knob).
Config conv2d_nchwc_default(const ConfigSpace& space, const Conv2dWorkload& w, int vector_lanes,
                            int vector_registers = 32);
/// A valid direct schedule for blocks no record chose (a layout fixed by the neighbours, NCHW
/// convolutions with blocks of 1, a Winograd node's fallback): the widest register row of at
/// most `widest` columns that divides OW and fits `vector_registers`, one row.
Conv2dSchedule conv2d_nchwc_schedule_for_blocks(const Conv2dWorkload& w, int64_t ic_bn,
                                                int64_t oc_bn, int vector_lanes,
                                                int64_t widest = 31, int vector_registers = 32);

}  // namespace tensortune::schedule_space
