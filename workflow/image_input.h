#pragma once
/// \file
/// A photo as a network's input: what `quantize --calibrate DIR` and `run --input NAME=x.jpg`
/// feed a float32 image classifier, so that both see the same tensor for the same file.
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "support/error.h"

namespace tensortune::workflow {

/// Per channel (R, G, B; one value for grey inputs), on pixels scaled to [0, 1]:
/// (pixel - mean) / std. ImageNet's by default, as torchvision's models expect.
struct ImageNormalization {
  std::vector<double> mean = {0.485, 0.456, 0.406};
  std::vector<double> std = {0.229, 0.224, 0.225};
};

/// The PNG or JPEG at `path` as a float32 [N, C, H, W] input with C = 3 (RGB) or 1 (the
/// channels' mean): resized bilinearly to H x W, normalised, repeated over the batch.
/// kInvalidArgument naming the file, the input's type or the normalisation's field otherwise.
Expected<graph::Tensor> image_tensor(const std::string& path, const graph::TensorType& input,
                                     const ImageNormalization& normalization);

}  // namespace tensortune::workflow
