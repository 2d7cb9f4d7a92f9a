#pragma once
/// \file
/// The x86 dense templates, y[M, N] = x[M, K] * w[N, K]^T.
///
/// dense_pack.x86: weights pre-packed to (N / bn, K, bn), bn = tile_x[-1] vectorised.
///   tile_y [-1, yo, yi]: yi rows of the register tile, yo row tiles per parallel task
///   tile_x [-1, xo, bn]: bn columns (vector lanes) per tile, xo column tiles per task
///   tile_k [-1, kf]: the k loop unrolled by kf
/// dense_nopack.x86: weights as given (N, K); the reduction axis is vectorised.
///   tile_y [-1, yi], tile_x [-1, xi]: a yi x xi tile of dot products
///   tile_k [-1, vk]: vk lanes of the k axis per step, reduced across lanes at the end
/// Valid when the register tile holds at most kMaxAccumulators vectors.
///
/// Packed weights of at least kDensePrefetchWeightBytes, read by kDensePrefetchMinRowTiles row
/// tiles or more, are prefetched (into L2) one column tile ahead, spread over the current tile's
/// row tiles: a network reads such weights from memory, and without it the first row tile of
/// every column tile waits on them (BERT-base ran in 0.84x the time). A matrix-vector product
/// (batch 1) streams each weight once: it is left to the hardware's prefetcher (GPT-2's decode
/// step ran 1.18x slower with both). Not a knob: the tuner times warm caches, where it
/// cannot show, so it is the workload's choice, and AutoTVM's records get it too.

#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template objects (registered in template_registry.cc).
const Template& dense_pack_template();
const Template& dense_nopack_template();

struct DenseSchedule {
  bool packed = true;
  int64_t yo = 1, yi = 1;
  int64_t xo = 1, xi = 1;         ///< packed: xi = bn
  int64_t kf = 1;                 ///< packed: k unroll; nopack: k vector lanes
  bool prefetch_weights = false;  ///< packed: the next column tile's weights, see above
};

/// Packed weights from this size on are prefetched: below it a network's weights may stay in
/// the caches between runs, and the prefetches would only take load slots.
inline constexpr int64_t kDensePrefetchWeightBytes = 1024 * 1024;
/// ... and where at least this many row tiles (batch / yi) read each column tile's weights.
inline constexpr int64_t kDensePrefetchMinRowTiles = 4;

ConfigSpace dense_space(const DenseWorkload& w, bool packed, int vector_lanes);
/// The config decoded for `w` (the space's workload).
DenseSchedule dense_schedule(const ConfigSpace& space, const Config& config, const DenseWorkload& w,
                             bool packed);
Config dense_default(const ConfigSpace& space, const DenseWorkload& w, bool packed,
                     int vector_lanes);

}  // namespace tensortune::schedule_space
