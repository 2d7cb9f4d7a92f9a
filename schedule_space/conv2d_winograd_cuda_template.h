#pragma once
/// \file
/// conv2d_nchw_winograd.cuda: AutoTVM's Winograd CUDA template for 3x3 stride-1 undilated
/// convolutions, knob for knob and in the same index order, so that its logs (TopHub's
/// cuda_v0.10 has 95 records) import by entity and by index. Data NCHW, output NCHW; the weight
/// transformed once (at compile time, or when tuning packs its operands) to AutoTVM's
/// U (alpha, alpha, CI, CO). F(m x m, 3 x 3) with AutoTVM's tile rule: m = 4 when the input
/// height is a multiple of 8, else 2; alpha = m + 2; P = N * ceil(OH / m) * ceil(OW / m) tiles.
///
/// Knobs, in index order:
///   tile_b                4-way split of alpha^2 whose inner factors are all 1 (one candidate)
///   tile_y                4-way split of CO: [block, vthread, thread, inner]
///   tile_x                4-way split of P: [block, vthread, thread, inner]
///   tile_rc               2-way split of CI: [outer, inner]
///   auto_unroll_max_step  0, 128, 1500
///   unroll_explicit       0, 1
///
/// The kernel is ours, one launch (AutoTVM runs the input transform, the batched GEMM and the
/// output transform as separate kernels): a block owns a CO x P tile (vthread * thread * inner
/// of tile_y and tile_x) for all alpha^2 points, so every thread keeps alpha^2 accumulators
/// per output it owns. Per step it transforms the input tiles of `chunk` input channels
/// (V = B^T d B, padding read as zeros) into shared memory and stages the matching U, then
/// multiplies; at the end each thread transforms its products back (Y = A^T M A) and writes
/// the m x m outputs inside the image, with the fused epilogue. `chunk` is tile_rc's inner
/// factor, or its largest divisor whose tiles fit in shared memory: AutoTVM's block holds one
/// point and stages far more channels per step than one holding all points can.
///
/// Valid when the block has at most 1024 threads, a thread at most kMaxCudaAccumulators
/// accumulators (alpha^2 per output), and one channel's tiles fit in 48 KiB.

#include <array>
#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

const Template& conv2d_nchw_winograd_cuda_template();

/// AutoTVM's output tile for a workload: 4 when the input height is a multiple of 8, else 2.
int winograd_cuda_tile(const Conv2dWorkload& w);

/// A conv2d_nchw_winograd.cuda config decoded.
struct WinogradCudaSchedule {
  int m = 2;
  std::array<int64_t, 4> y{}, x{};  ///< block, vthread, thread, inner (CO and tiles)
  std::array<int64_t, 2> rc{};      ///< outer, inner
  int64_t chunk = 1;                ///< input channels staged per step
  int64_t auto_unroll_max_step = 0;
  bool unroll_explicit = false;
  int64_t tiles_h = 1, tiles_w = 1;  ///< output tiles per image: rows, columns

  int alpha() const { return m + 2; }
  int64_t points() const { return int64_t{alpha()} * alpha(); }
  int64_t threads() const { return y[2] * x[2]; }
  int64_t outputs_per_thread() const { return y[1] * y[3] * x[1] * x[3]; }
  int64_t accumulators() const { return points() * outputs_per_thread(); }
  int64_t tile_co() const { return y[1] * y[2] * y[3]; }
  int64_t tile_p() const { return x[1] * x[2] * x[3]; }
  /// Floats of shared memory per staged input channel: its transformed tiles and its U.
  int64_t shared_floats_per_channel() const { return points() * (tile_p() + tile_co()); }
  int64_t shared_bytes() const { return 4 * chunk * shared_floats_per_channel(); }
  /// Blocks of the grid as (x, y, z): tile blocks, CO blocks, 1.
  std::array<int64_t, 3> grid() const { return {x[0], y[0], 1}; }
};

ConfigSpace conv2d_nchw_winograd_cuda_space(const Conv2dWorkload& w);
WinogradCudaSchedule conv2d_nchw_winograd_cuda_schedule(const Conv2dWorkload& w,
                                                        const ConfigSpace& space,
                                                        const Config& config);

}  // namespace tensortune::schedule_space
