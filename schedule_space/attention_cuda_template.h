#pragma once
/// \file
/// attention.cuda: out[b] = softmax(scale * q[b] k[b] + mask) v[b] in one kernel, the scores
/// never stored in global memory (an online softmax over blocks of keys, as attention.x86 does).
/// Our own template (AutoTVM has none). Knobs: tile_y [-1, threads, inner] of the queries M and
/// tile_x [-1, threads, inner] of a block of keys, each a divisor or a power of two (tails
/// allowed: the last row tile and the last key block may be short, the missing rows and keys
/// read as zero and -infinity).
///
/// A block computes tile_m = threads_y * inner_y query rows of one batch entry (blockIdx.x runs
/// over batch entries times row tiles) with threads_y x threads_x threads. Thread (ty, tx) owns
/// rows ty * inner_y + i and, of each key block of tile_n = threads_x * inner_x keys, keys
/// tx + threads_x * c (strided, so that a warp reads consecutive shared-memory words), and of
/// the output, value columns tx + threads_x * c. The block keeps its queries in shared memory
/// for the whole run; per key block it stages k^T's columns, computes the scores as a register
/// tile, reduces each row's maximum and exponential sum through a small shared table (one
/// partial per thread of the row), writes the exponentials to shared memory, stages v's rows in
/// the buffer k^T used, and adds the exponentials times v to the output accumulators after
/// correcting them by exp(old max - new max). Four barriers per key block.
/// Valid when the block fits the universal GPU limits (1024 threads, 48 KiB of static shared
/// memory) and a thread holds at most kMaxCudaAccumulators floats.

#include <array>
#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template object (registered in template_registry.cc).
const Template& attention_cuda_template();

struct AttentionCudaSchedule {
  std::array<int64_t, 3> y{}, x{};  ///< rows and a key block: blocks (with a tail), threads, inner
  int64_t k = 0, dv = 0;            ///< the workload's head and value widths
  int64_t threads() const { return y[1] * x[1]; }
  int64_t tile_m() const { return y[1] * y[2]; }
  int64_t tile_n() const { return x[1] * x[2]; }
  /// Output columns per thread: Dv spread over threads_x, the last ones perhaps idle.
  int64_t value_columns() const { return (dv + x[1] - 1) / x[1]; }
  /// Scores, output accumulators and the rows' running maximum and sum.
  int64_t accumulators() const { return y[2] * (x[2] + value_columns() + 2); }
  /// Floats: the queries [K][tile_m], one buffer for k^T [K][tile_n] or v [tile_n][Dv], the
  /// exponentials [tile_m][tile_n], two reduction tables [tile_m][threads_x].
  int64_t shared_floats() const {
    return k * tile_m() + (k > dv ? k : dv) * tile_n() + tile_m() * tile_n() + 2 * tile_m() * x[1];
  }
  int64_t shared_bytes() const { return 4 * shared_floats(); }
};

ConfigSpace attention_cuda_space(const AttentionWorkload& w);
AttentionCudaSchedule attention_cuda_schedule(const AttentionWorkload& w, const ConfigSpace& space,
                                              const Config& config);

}  // namespace tensortune::schedule_space
