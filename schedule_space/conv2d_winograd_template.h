#pragma once
/// \file
/// The x86 Winograd template for 3x3, stride-1, undilated convolutions in the NCHW[x]c layout
/// (conv2d_NCHWc_winograd.x86): data NCHW[x]c, output NCHW[y]c as the direct template's, and
/// weights transformed once (at compile time, or when tuning packs its operands) to
/// U[alpha^2][OC/y][IC][y] (see winograd_transform.h).
///
/// One parallel iteration serves a block of T output tiles (m x m each) of one image, for every
/// output channel: it transforms the block's input tiles of every input channel into a scratch
/// V[alpha^2][T][IC] on the stack, multiplies V[p] by U[p] for each of the alpha^2 points in
/// register tiles of reg_t tiles x y channels, and for each channel block transforms the
/// products back to the output tile, applying the fused epilogue (bias, residual add, relu) on
/// the way to memory. The input transform thus runs fused into the GEMM's loading, per block,
/// while its V is in cache; the output transform runs fused with the epilogue.
///
/// Knobs, in index order:
///   tile_ic  split [-1, x], divisors of IC: the data layout's channel block (the input
///            transform's vector)
///   tile_oc  split [-1, y], divisors of OC: the output layout's block and the GEMM's columns
///   tile_m   output tile m: 2, 4 or 6 (F(2x2,3x3), F(4x4,3x3), F(6x6,3x3))
///   reg_t    tiles in the GEMM's register tile (its rows): 1, 2, 3, 4, 6, 8
///   block_t  register tiles per block: T = reg_t * block_t tiles per parallel iteration
///   oc_split output-channel groups run as separate parallel iterations: 1, 2, 4, 8
///   prefetch 1: prefetch the next point's weights into L2 while multiplying this point's
///            (for weights that arrive cold, as in a network); 0: leave it to the hardware
/// Valid when reg_t * ceil(y / lanes) accumulators fit in kMaxAccumulators, the stack scratch
/// (alpha^2 * T * (IC + y) floats) fits in kMaxWinogradScratchBytes, and a block is not all
/// padding (T - reg_t < tiles of the image).

#include <cstdint>
#include <string_view>

#include "schedule_space/config_space.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template object (registered in template_registry.cc).
const Template& conv2d_winograd_template();

/// A config of the template, decoded.
struct WinogradSchedule {
  int m = 4;
  int64_t ic_bn = 1, oc_bn = 1;
  int64_t reg_t = 1, block_t = 1;
  /// Output-channel groups run as separate parallel iterations (each transforms its tile
  /// block's input again): parallelism for layers with few tiles, where one iteration per
  /// tile block leaves threads idle and every thread would stream all of the weights.
  int64_t oc_split = 1;
  /// While multiplying one point's weights, prefetch the next point's into L2, a chunk ahead:
  /// in a network the transformed weights arrive cold (alpha^2/9 of the direct weights), and
  /// the points' chunks lie far apart, so the hardware's stream prefetch restarts at each.
  bool prefetch = false;
  int alpha() const { return m + 2; }
  int64_t tiles_per_block() const { return reg_t * block_t; }
};

/// Stack scratch one kernel invocation may use: well inside the 8 MiB stacks of Linux threads
/// (the thread pool's workers and the main thread), and about the size of one core's L2.
inline constexpr int64_t kMaxWinogradScratchBytes = int64_t{1} << 20;

/// OK when the template can serve the workload: a 3x3 kernel, stride 1, dilation 1 (any
/// padding). Otherwise kInvalidArgument naming what disqualifies it.
Status winograd_accepts(const Conv2dWorkload& w,
                        std::string_view template_name = "conv2d_NCHWc_winograd");

/// Output tiles of one image: ceil(OH / m) rows by ceil(OW / m) columns.
struct WinogradTiling {
  int64_t rows = 0, cols = 0;
  int64_t count() const { return rows * cols; }
};
WinogradTiling winograd_tiling(const Conv2dWorkload& w, int m);
/// Parallel iterations of the kernel: output-channel groups x images x tile blocks.
int64_t winograd_parallel_extent(const Conv2dWorkload& w, const WinogradSchedule& s);

ConfigSpace conv2d_winograd_space(const Conv2dWorkload& w, int vector_lanes);
WinogradSchedule conv2d_winograd_schedule(const ConfigSpace& space, const Config& config);
/// m = 4 (2 for outputs narrower than 8), y = the largest divisor of OC <= 2 vectors, x = the
/// largest divisor of IC <= one vector, the largest register tile that fits, one per block.
Config conv2d_winograd_default(const ConfigSpace& space, const Conv2dWorkload& w, int vector_lanes);

}  // namespace tensortune::schedule_space
