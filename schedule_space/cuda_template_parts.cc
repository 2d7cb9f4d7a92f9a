// Implements cuda_template_parts.h.
#include "schedule_space/cuda_template_parts.h"

#include <cmath>

namespace tensortune::schedule_space {

void append_warp_features(std::vector<float>& features, double threads_per_block) {
  features.push_back(static_cast<float>(std::ceil(threads_per_block / 32.0)));
  features.push_back(static_cast<int64_t>(threads_per_block) % 32 == 0 ? 0.0f : 1.0f);
}

KernelSignature nchw_conv_signature(const Conv2dWorkload& w, std::vector<int64_t> weight_shape,
                                    int64_t blocks) {
  KernelSignature sig;
  sig.data_shape = {w.batch, w.in_channels, w.in_height, w.in_width};
  sig.weight_shape = std::move(weight_shape);
  sig.out_shape = {w.batch, w.out_channels, w.out_height(), w.out_width()};
  sig.parallel_extent = blocks;
  return sig;
}

}  // namespace tensortune::schedule_space
