#pragma once
/// \file
/// batch_matmul.x86: y[b, M, N] = x[b, M, K] * w[b], both operands computed at run time (no
/// packing). AutoTVM's knobs, names and order: tile_y [-1, yi] of M, tile_x [-1, xi] of N,
/// tile_k [-1, kf] of K.
///
/// Each parallel iteration computes one yi x xi tile of one batch entry over the whole K:
///   transpose_b (w is [B, N, K], AutoTVM's form): yi * xi dot products with K vectorised by kf
///     lanes, reduced across lanes at the end (AutoTVM's rfactor of tile_k's inner part);
///   w as [B, K, N] (exporters' form): yi rows of xi columns, the columns vectorised, each k a
///     broadcast of x times a row of w; kf unrolls k.
/// Valid when the tile's accumulators fit in kMaxAccumulators vector registers.

#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template object (registered in template_registry.cc).
const Template& batch_matmul_template();

struct BatchMatmulSchedule {
  int64_t yi = 1, xi = 1, kf = 1;
};

ConfigSpace batch_matmul_space(const BatchMatmulWorkload& w, int vector_lanes);
BatchMatmulSchedule batch_matmul_schedule(const ConfigSpace& space, const Config& config);
/// AutoTVM's fallback (_default_batch_matmul_config), or the first valid config when that one
/// is not valid here.
Config batch_matmul_default(const ConfigSpace& space, const BatchMatmulWorkload& w);

}  // namespace tensortune::schedule_space
