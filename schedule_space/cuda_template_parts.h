#pragma once
/// \file
/// Pieces the CUDA templates share: the features every one ends with, and the signature of a
/// kernel over plain NCHW tensors.

#include <cstdint>
#include <vector>

#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// Appends the features every CUDA template ends with: warps per block, and 1 when the last warp
/// is partial (threads not a multiple of 32), 0 when not.
void append_warp_features(std::vector<float>& features, double threads_per_block);

/// The signature of a convolution kernel over NCHW data and output whose weight has
/// `weight_shape` (OIHW, or a template's own transform of it) and whose parallel loop is its
/// `blocks` thread blocks.
KernelSignature nchw_conv_signature(const Conv2dWorkload& w, std::vector<int64_t> weight_shape,
                                    int64_t blocks);

}  // namespace tensortune::schedule_space
