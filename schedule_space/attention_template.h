#pragma once
/// \file
/// attention.x86: out[b] = softmax(scale * q[b] k[b] + mask) v[b] in one kernel, the scores never
/// stored (an online softmax: each block of keys rescales what the earlier blocks summed). Our
/// own template (AutoTVM has none). Knobs: tile_y [-1, yi] of the queries M, tile_x [-1, xi] of
/// the keys N, each a divisor or a power of two (a tail: the last tile has fewer rows, the last
/// block fewer keys), and tile_y also every count up to 8.
///
/// Each parallel iteration computes yi query rows of one batch entry over all N keys, a block of
/// xi keys at a time: the yi x xi scores as a register tile (xi vectorised, a broadcast of q
/// times a row of k^T per step of K), scaled and masked; per row the block's max, the running
/// max and sum corrected by exp(old max - new max), the exponentials written to a yi x xi
/// scratch; then the yi x Dv output accumulators, corrected the same way, take the scratch's
/// broadcasts times v's rows. At the end each row is divided by its sum.
/// Valid when each of the two tiles fits in kMaxAccumulators vector registers and xi <= 512.

#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template object (registered in template_registry.cc).
const Template& attention_template();

struct AttentionSchedule {
  int64_t yi = 1;  ///< query rows per tile
  int64_t xi = 1;  ///< keys per block
};

ConfigSpace attention_space(const AttentionWorkload& w, int vector_lanes);
AttentionSchedule attention_schedule(const ConfigSpace& space, const Config& config);
/// 4 query rows and blocks of 64 keys (fewer where M or N is smaller), or the first valid
/// config when that one is not valid here.
Config attention_default(const ConfigSpace& space, const AttentionWorkload& w);

/// Where the tuning kernel's one weight buffer (operand_shapes) holds k^T, v and the mask.
struct AttentionOperandOffsets {
  int64_t k = 0, v = 0, mask = 0;
};
AttentionOperandOffsets attention_operand_offsets(const AttentionWorkload& w);

}  // namespace tensortune::schedule_space
