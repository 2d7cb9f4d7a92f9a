#pragma once
/// \file
/// The CUDA dense templates, AutoTVM's two (topi's gpu dense), for y[M, N] = x[M, K] w[N, K]^T.
///
/// dense_small_batch.gpu: one knob, tile_k (2-way split of K: [outer, inner]). A block per
/// output element (blockIdx.y = m, blockIdx.x = n), `inner` threads; thread t sums the products
/// at k = t, t + inner, ... (consecutive threads read consecutive addresses), then the block
/// adds its partial sums in shared memory. Valid when inner <= 1024.
///
/// dense_large_batch.gpu: tile_x (M) and tile_y (N), 4-way splits [block, vthread, thread,
/// inner], and tile_k, a 3-way split of K [outer, middle, inner]. A block computes an
/// (M tile) x (N tile) output tile with thread-grid (threadIdx.y, threadIdx.x) = the thread
/// parts of (x, y); each thread holds vthread*inner of each axis in registers; per outer k step
/// the block stages middle*inner columns of both operands in shared memory, the inner loop
/// unrolled. AutoTVM filters its candidates (vthread in 2..64 and thread in 8..64, both powers
/// of two, vthread*thread*inner in {64, 128}; more than 2 outer k steps), but its k filter
/// reads the outer factor, which is always -1, so the filtering always fails and AutoTVM tunes
/// the unfiltered space. Here the filters are applied as meant; an axis that no candidate
/// passes (a batch below 64, say) keeps its unfiltered candidates, as AutoTVM intended.
/// Valid when a block has at most 1024 threads, its tiles fit in 48 KiB of shared memory and
/// a thread holds at most kMaxCudaAccumulators accumulators.

#include <array>
#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

const Template& dense_small_batch_gpu_template();
const Template& dense_large_batch_gpu_template();

/// AutoTVM's CUDA strategy runs dense_large_batch.gpu from this many rows (where its M tiles
/// fill a block) and dense_small_batch.gpu below (Template::extracted_for).
inline constexpr int64_t kLargeBatch = 32;

struct DenseSmallBatchSchedule {
  int64_t k_outer = 1, k_inner = 1;  ///< k_inner = threads per block
};

struct DenseLargeBatchSchedule {
  std::array<int64_t, 4> x{}, y{};  ///< M and N: block, vthread, thread, inner
  std::array<int64_t, 3> k{};       ///< outer, middle, inner
  int64_t threads() const { return x[2] * y[2]; }
  int64_t tile_m() const { return x[1] * x[2] * x[3]; }
  int64_t tile_n() const { return y[1] * y[2] * y[3]; }
  int64_t tile_k() const { return k[1] * k[2]; }
  int64_t accumulators() const { return x[1] * x[3] * y[1] * y[3]; }
  int64_t shared_bytes() const { return 4 * tile_k() * (tile_m() + tile_n()); }
};

ConfigSpace dense_small_batch_space(const DenseWorkload& w);
DenseSmallBatchSchedule dense_small_batch_schedule(const DenseWorkload& w, const ConfigSpace& space,
                                                   const Config& c);
ConfigSpace dense_large_batch_space(const DenseWorkload& w);
DenseLargeBatchSchedule dense_large_batch_schedule(const DenseWorkload& w, const ConfigSpace& space,
                                                   const Config& c);

}  // namespace tensortune::schedule_space
