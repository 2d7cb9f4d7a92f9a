#pragma once
/// \file
/// The x86 int8 dense template, AutoTVM's `dense_int8.x86`: y[M, N] = x[M, K] w[N, K]^T with
/// uint8 data, int8 weights in NC16n4c ((N/16, K/4, 16, 4): four consecutive k of one output
/// unit adjacent, sixteen units per block) and an int32 output, summed exactly.
///
/// Knob: `tile_y`, a 2-way split of M whose inner factor is the register tile's rows (AutoTVM
/// defines it outside its fallback only; its fallback factor is 32). The template takes
/// K % 4 == 0 and N % 16 == 0 (AutoTVM's alter-op condition for the packed layout), and N % 8
/// == 0 otherwise, in blocks of 8 (NC8n4c; a classifier of 1000 classes, which AutoTVM pads;
/// the AVX2 forms' accumulator width). A config is valid when rows * 2 * ceil(block / lanes)
/// int32 vectors fit in kMaxAccumulators. The
/// workload key is AutoTVM's dense argument list (data, weight (N, K), null, "int32") with the
/// uint8 / int8 dtypes.

#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template object (registered in template_registry.cc).
const Template& dense_int8_template();

struct DenseInt8Schedule {
  int64_t rows = 1;    ///< rows of M per register tile (tile_y's inner factor)
  int64_t oc_bn = 16;  ///< output units per weight block (NC16n4c, or NC8n4c)
};

/// Output units per weight block: 16, or 8 when N is not a multiple of 16.
int64_t dense_int8_block(const DenseWorkload& w);

ConfigSpace dense_int8_space(const DenseWorkload& w, int vector_lanes);
DenseInt8Schedule dense_int8_schedule(const ConfigSpace& space, const Config& config,
                                      const DenseWorkload& w);

}  // namespace tensortune::schedule_space
