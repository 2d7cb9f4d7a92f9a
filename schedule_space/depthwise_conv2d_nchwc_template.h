#pragma once
/// \file
/// The x86 depthwise_conv2d_NCHWc template (AutoTVM's name and knobs): a convolution with one
/// output channel per input channel (groups = IC = OC). Data NCHW[x]c, kernel
/// (OC/y, 1, KH, KW, 1, y), output NCHW[y]c with x = ic_bn, y = oc_bn. Output channel c reads
/// input channel c, so the blocks may differ: the kernel reads the input block holding its
/// channels.
///
/// Knobs, in index order (AutoTVM's, so that its logs map in by index and by entity):
///   tile_ic    split [-1, ic_bn], divisors of IC
///   tile_oc    split [-1, oc_bn], divisors of OC; the oc_bn axis is the vectorised one
///   tile_ow    split [-1, reg_n], divisors of OW with reg_n <= 64: output columns whose
///              accumulators stay in registers across the taps
///   unroll_kw  true: every tap of the kernel unrolled; false: a loop over the kernel's columns
/// A config is valid when its reg_n * ceil(oc_bn / lanes) accumulators fit in kMaxAccumulators
/// registers. Blocks where one divides the other read whole vectors; others read lane by lane
/// (correct, slow: the tuners learn to avoid them).

#include <cstdint>

#include "schedule_space/config_space.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template object (registered in template_registry.cc).
const Template& depthwise_conv2d_nchwc_template();

/// A config of the depthwise template, decoded.
struct DepthwiseSchedule {
  int64_t ic_bn = 1;
  int64_t oc_bn = 1;
  int64_t reg_n = 1;  ///< output columns per register tile
  bool unroll_kw = true;
};

DepthwiseSchedule depthwise_conv2d_nchwc_schedule(const ConfigSpace& space, const Config& config);
/// Accepted workloads: groups = IC = OC (a channel multiplier of 1), any stride, padding and
/// dilation.
Status depthwise_accepts(const Conv2dWorkload& w);

}  // namespace tensortune::schedule_space
