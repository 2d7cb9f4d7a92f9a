#pragma once
/// \file
/// The x86 int8 convolution template, AutoTVM's `conv2d_NCHWc_int8.x86`: uint8 data in
/// NCHW[x]c, int8 kernel in OIHW[x/4]i[y]o4i (four consecutive input channels of one output
/// channel adjacent: the operand of one VNNI `vpdpbusd` lane), int32 output in NCHW[y]c, with
/// x = ic_bn and y = oc_bn. Exact: every product and sum in int32.
///
/// Knobs, in AutoTVM's order (so that its logs map in by index):
///   tile_ic    split [-1, ic_bn], divisors of IC with ic_bn % 4 == 0
///   tile_oc    split [-1, oc_bn], divisors of OC with oc_bn % 16 == 0 (AutoTVM's filter names
///              16, the AVX-512 int32 lane count, on every target)
///   tile_ow    split [-1, reg_n], divisors of OW with reg_n <= 64
///   tile_oh    1x1 kernels only: rows of the register tile, [1, 2] ([1] when OH = 1)
///   unroll_kw  other kernels: true/false
/// The template takes ungrouped convolutions with IC % 4 == 0 and OC % 16 == 0 (AutoTVM's
/// legalization pads channels to those before it applies). A config is valid when its
/// register tile, reg_h * reg_n * 2 * ceil(oc_bn / lanes) int32 vectors (two per block of
/// lanes where the CPU has no VNNI: the exact pmaddwd form keeps pairs apart until the end),
/// fits in kMaxAccumulators.

#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template object (registered in template_registry.cc).
const Template& conv2d_nchwc_int8_template();

/// A config of the int8 template, decoded.
struct Conv2dInt8Schedule {
  int64_t ic_bn = 4;
  int64_t oc_bn = 16;
  int64_t reg_n = 1;  ///< output columns per register tile
  int64_t reg_h = 1;  ///< output rows per register tile (1x1 kernels' tile_oh)
  bool unroll_kw = false;
};

/// Whether the config's kernel runs on AMX tiles where the CPU has them: blocks of 16 channels,
/// steps of at least 16 input channels and at least two output pixels per register tile (a
/// narrower tile leaves the tile unit idler than VNNI's vectors would be).
bool runs_on_amx_tiles(const Conv2dInt8Schedule& s);

ConfigSpace conv2d_nchwc_int8_space(const Conv2dWorkload& w, int vector_lanes);
Conv2dInt8Schedule conv2d_nchwc_int8_schedule(const ConfigSpace& space, const Config& config);
/// AutoTVM's fallback (topi/generic/conv2d.py): oc_bn = 16; ic_bn = the first of 16, 12, 8, 4
/// that divides IC; 3x3-style kernels: reg_n = the largest divisor of OW <= 31, unroll_kw
/// false; 1x1 kernels: the widest reg_n dividing OW, then the most rows (of tile_oh's [1, 2]
/// dividing OH), with reg_n * rows < 32. Kept valid: shrunk to the register budget.
Config conv2d_nchwc_int8_default(const ConfigSpace& space, const Conv2dWorkload& w,
                                 int vector_lanes);
/// The fallback on a CPU with AMX int8 tiles: a tile's A operand holds up to 16 pixels of up to
/// 64 input channels, so ic_bn = the largest divisor of IC up to 256 that is a multiple of 16,
/// oc_bn = 16, reg_n = the largest divisor of OW up to 16 that the register budget takes (1x1
/// kernels: two rows where that leaves fewer than 8 pixels); AutoTVM's where IC has no such
/// divisor.
Config conv2d_nchwc_int8_amx_default(const ConfigSpace& space, const Conv2dWorkload& w,
                                     int vector_lanes);

}  // namespace tensortune::schedule_space
