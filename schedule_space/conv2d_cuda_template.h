#pragma once
/// \file
/// The CUDA conv2d templates.
///
/// conv2d_nchw.cuda is AutoTVM's direct CUDA template, knob for knob and in the same index
/// order, so that AutoTVM's CUDA logs import by entity and by index. Data NCHW, kernel OIHW,
/// output NCHW; padding is read as zeros (inlined), never materialised. Knobs:
///   tile_f, tile_y, tile_x   4-way splits of OC, OH, OW: [block, vthread, thread, inner]
///   tile_rc, tile_ry, tile_rx 2-way splits of IC, KH, KW: [outer, inner]
///   auto_unroll_max_step     0, 512, 1500: reduction loop nests of at most that many steps
///                            are unrolled (0: none)
///   unroll_explicit          0, 1: the generator unrolls them (1) or leaves the choice to the
///                            CUDA compiler (0)
/// The kernel: a block computes an OC x OH x OW tile (vthread*thread*inner of each axis) of one
/// image; its threads (threadIdx.z/y/x = the thread parts of f/y/x) each hold
/// vthread*inner accumulators of each axis in registers. Per step of the outer reduction loops
/// (rc, ry, rx outer parts), the block stages the input window and the weights it needs in
/// shared memory, fetched cooperatively by all threads, and reduces over the inner parts.
///
/// A config is valid when its block has at most 1024 threads, its shared tiles fit in 48 KiB
/// and a thread holds at most kMaxCudaAccumulators accumulators.
///
/// conv2d_NCHWc.cuda is ours: the blocked layouts of the CPU path (data NCHW[x]c, kernel
/// OIHW[x]i[y]o, output NCHW[y]c), so that one graph, one layout plan and one record DB serve
/// CPU and GPU. A thread computes one whole output-channel block (y channels, innermost in
/// memory) for inner x inner pixels, so its y accumulators per pixel sit in registers and its
/// weights are y contiguous floats that every thread of the same channel block reads together.
/// Knobs:
///   tile_ic  [-1, x]  divisors of IC: the data block
///   tile_oc  [-1, y]  divisors of OC up to 64: the output block (registers per pixel)
///   tile_f   [block, thread] of the OC/y channel blocks
///   tile_y, tile_x  [block, thread, inner] of OH and OW
///   tile_rc  [outer, inner] of the IC/x input blocks: inner blocks are staged per step, with
///            the whole kernel window, in shared memory (fetched by all threads, coalesced along
///            the block)
///   unroll_kw  0, 1: the kernel-width loop left to the compiler or unrolled
/// Valid under the same three limits as conv2d_nchw.cuda.

#include <array>
#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

const Template& conv2d_nchw_cuda_template();

/// A conv2d_nchw.cuda config decoded: every split with its outer part resolved.
struct Conv2dCudaSchedule {
  std::array<int64_t, 4> f{}, y{}, x{};     ///< block, vthread, thread, inner
  std::array<int64_t, 2> rc{}, ry{}, rx{};  ///< outer, inner
  int64_t auto_unroll_max_step = 0;
  bool unroll_explicit = false;

  int64_t threads() const { return f[2] * y[2] * x[2]; }
  /// Per-thread accumulators: vthread * inner of each output axis.
  int64_t accumulators() const { return f[1] * f[3] * y[1] * y[3] * x[1] * x[3]; }
  /// A block's output tile per axis: vthread * thread * inner.
  int64_t tile_f() const { return f[1] * f[2] * f[3]; }
  int64_t tile_y() const { return y[1] * y[2] * y[3]; }
  int64_t tile_x() const { return x[1] * x[2] * x[3]; }
  /// Rows and columns of the staged input window.
  int64_t window_h(const Conv2dWorkload& w) const {
    return (tile_y() - 1) * w.stride_h + (ry[1] - 1) * w.dilation_h + 1;
  }
  int64_t window_w(const Conv2dWorkload& w) const {
    return (tile_x() - 1) * w.stride_w + (rx[1] - 1) * w.dilation_w + 1;
  }
  int64_t input_tile_floats(const Conv2dWorkload& w) const {
    return rc[1] * window_h(w) * window_w(w);
  }
  int64_t weight_tile_floats() const { return tile_f() * rc[1] * ry[1] * rx[1]; }
  int64_t shared_bytes(const Conv2dWorkload& w) const {
    return 4 * (input_tile_floats(w) + weight_tile_floats());
  }
  /// Blocks of the grid: (N * f blocks, y blocks, x blocks) as (z, y, x).
  std::array<int64_t, 3> grid(const Conv2dWorkload& w) const {
    return {w.batch * f[0], y[0], x[0]};
  }
};

ConfigSpace conv2d_nchw_cuda_space(const Conv2dWorkload& w);

const Template& conv2d_nchwc_cuda_template();

/// A conv2d_NCHWc.cuda config decoded.
struct Conv2dNchwcCudaSchedule {
  int64_t ic_bn = 1, oc_bn = 1;
  std::array<int64_t, 2> f{};       ///< channel blocks: block, thread
  std::array<int64_t, 3> y{}, x{};  ///< block, thread, inner
  std::array<int64_t, 2> rc{};      ///< input blocks: outer, inner
  bool unroll_kw = false;

  int64_t threads() const { return f[1] * y[1] * x[1]; }
  int64_t accumulators() const { return oc_bn * y[2] * x[2]; }
  int64_t tile_y() const { return y[1] * y[2]; }
  int64_t tile_x() const { return x[1] * x[2]; }
  int64_t window_h(const Conv2dWorkload& w) const {
    return (tile_y() - 1) * w.stride_h + (w.kernel_h - 1) * w.dilation_h + 1;
  }
  int64_t window_w(const Conv2dWorkload& w) const {
    return (tile_x() - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w + 1;
  }
  int64_t input_tile_floats(const Conv2dWorkload& w) const {
    return rc[1] * ic_bn * window_h(w) * window_w(w);
  }
  int64_t shared_bytes(const Conv2dWorkload& w) const { return 4 * input_tile_floats(w); }
  /// (N * channel-block blocks, y blocks, x blocks) as (z, y, x).
  std::array<int64_t, 3> grid(const Conv2dWorkload& w) const {
    return {w.batch * f[0], y[0], x[0]};
  }
};

ConfigSpace conv2d_nchwc_cuda_space(const Conv2dWorkload& w);
Conv2dNchwcCudaSchedule conv2d_nchwc_cuda_schedule(const Conv2dWorkload& w,
                                                   const ConfigSpace& space, const Config& config);
Conv2dCudaSchedule conv2d_nchw_cuda_schedule(const Conv2dWorkload& w, const ConfigSpace& space,
                                             const Config& config);

}  // namespace tensortune::schedule_space
