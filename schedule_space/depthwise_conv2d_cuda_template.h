#pragma once
/// \file
/// depthwise_conv2d_nchw.cuda: AutoTVM's depthwise CUDA template, knob for knob and in the same
/// index order, so that its logs (TopHub's cuda_v0.10 has 97 records) import by entity and by
/// index. A convolution with one output channel per input channel (groups = IC = OC); data
/// NCHW, kernel (C, 1, KH, KW), output NCHW; padding read as zeros, never materialised. Knobs:
///   tile_f, tile_y, tile_x   4-way splits of C, OH, OW: [block, vthread, thread, inner]
///   auto_unroll_max_step     0, 256, 1500: the kernel-window loops are unrolled when they
///                            have at most that many steps (0: never)
///   unroll_explicit          0, 1: the generator unrolls them (1) or the CUDA compiler
///                            chooses (0)
/// The kernel: a block computes a C x OH x OW tile (vthread * thread * inner of each axis) of
/// one image. Its threads stage the tile's input window (every channel of the tile, the whole
/// kernel window: a depthwise convolution reduces over the window only) and the tile's
/// weights in shared memory once, then each thread accumulates its vthread * inner outputs of
/// each axis in registers.
///
/// A config is valid when its block has at most 1024 threads, its shared tiles fit in 48 KiB
/// and a thread holds at most kMaxCudaAccumulators accumulators.

#include <array>
#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

const Template& depthwise_conv2d_nchw_cuda_template();

/// A depthwise_conv2d_nchw.cuda config decoded: every split with its outer part resolved.
struct DepthwiseCudaSchedule {
  std::array<int64_t, 4> f{}, y{}, x{};  ///< block, vthread, thread, inner
  int64_t auto_unroll_max_step = 0;
  bool unroll_explicit = false;

  int64_t threads() const { return f[2] * y[2] * x[2]; }
  int64_t accumulators() const { return f[1] * f[3] * y[1] * y[3] * x[1] * x[3]; }
  int64_t tile_f() const { return f[1] * f[2] * f[3]; }
  int64_t tile_y() const { return y[1] * y[2] * y[3]; }
  int64_t tile_x() const { return x[1] * x[2] * x[3]; }
  /// Rows and columns of the staged input window of one channel.
  int64_t window_h(const Conv2dWorkload& w) const {
    return (tile_y() - 1) * w.stride_h + (w.kernel_h - 1) * w.dilation_h + 1;
  }
  int64_t window_w(const Conv2dWorkload& w) const {
    return (tile_x() - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w + 1;
  }
  int64_t input_tile_floats(const Conv2dWorkload& w) const {
    return tile_f() * window_h(w) * window_w(w);
  }
  int64_t weight_tile_floats(const Conv2dWorkload& w) const {
    return tile_f() * w.kernel_h * w.kernel_w;
  }
  int64_t shared_bytes(const Conv2dWorkload& w) const {
    return 4 * (input_tile_floats(w) + weight_tile_floats(w));
  }
  /// Blocks of the grid: (N * f blocks, y blocks, x blocks) as (z, y, x).
  std::array<int64_t, 3> grid(const Conv2dWorkload& w) const {
    return {w.batch * f[0], y[0], x[0]};
  }
};

ConfigSpace depthwise_conv2d_nchw_cuda_space(const Conv2dWorkload& w);
DepthwiseCudaSchedule depthwise_conv2d_nchw_cuda_schedule(const Conv2dWorkload& w,
                                                          const ConfigSpace& space,
                                                          const Config& config);

}  // namespace tensortune::schedule_space
