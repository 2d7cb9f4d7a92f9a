#pragma once
/// \file
/// batch_matmul.cuda, AutoTVM's CUDA batch matmul (topi/cuda/batch_matmul.py), for
/// y[b, M, N] = x[b, M, K] * w[b], both operands computed at run time (attention's Q K^T and its
/// product with V); w as [B, N, K] (AutoTVM's form, transpose_b) or [B, K, N] (exporters').
///
/// AutoTVM's knobs, names and order, so that its logs import with its indices: tile_y and
/// tile_x, 3-way factor splits [block, thread, inner] of M and N; tile_k, a 2-way split of K
/// [outer, inner]; auto_unroll_max_step {8, 16, 32, 64}; unroll_explicit {0, 1}.
///
/// A block computes a (thread * inner of y) x (thread * inner of x) tile of one batch entry
/// (blockIdx.z = b, threadIdx.y and threadIdx.x the thread parts); each thread holds inner_y x
/// inner_x accumulators. Per outer k step the block stages tile_k's inner columns of both
/// operands in shared memory (consecutive threads read consecutive addresses of each operand's
/// rows), then the inner k loop runs, unrolled as the unroll knobs say. Valid when a block has
/// at most 1024 threads, its tiles fit in 48 KiB of shared memory and a thread holds at most
/// kMaxCudaAccumulators accumulators.

#include <array>
#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template object (registered in template_registry.cc).
const Template& batch_matmul_cuda_template();

struct BatchMatmulCudaSchedule {
  std::array<int64_t, 3> y{}, x{};  ///< M and N: block, thread, inner
  std::array<int64_t, 2> k{};       ///< outer, inner
  int64_t auto_unroll_max_step = 16;
  bool unroll_explicit = false;
  int64_t threads() const { return y[1] * x[1]; }
  int64_t tile_m() const { return y[1] * y[2]; }
  int64_t tile_n() const { return x[1] * x[2]; }
  int64_t accumulators() const { return y[2] * x[2]; }
  int64_t shared_bytes() const { return 4 * k[1] * (tile_m() + tile_n()); }
};

ConfigSpace batch_matmul_cuda_space(const BatchMatmulWorkload& w);
BatchMatmulCudaSchedule batch_matmul_cuda_schedule(const BatchMatmulWorkload& w,
                                                   const ConfigSpace& space, const Config& config);

}  // namespace tensortune::schedule_space
