#include "workflow/image_input.h"

#include "support/image_io.h"

namespace tensortune::workflow {

Expected<graph::Tensor> image_tensor(const std::string& path, const graph::TensorType& input,
                                     const ImageNormalization& normalization) {
  const graph::Shape& s = input.shape;
  if (s.size() != 4 || (s[1] != 3 && s[1] != 1) || input.dtype != graph::DType::kFloat32)
    return invalid_argument(path + ": an image feeds a float32 [N, 3 or 1, H, W] input, the " +
                            "model's is " + graph::type_string(input));
  const size_t channels = static_cast<size_t>(s[1]);
  const auto& mean = normalization.mean;
  const auto& std = normalization.std;
  if (mean.size() != channels || std.size() != channels)
    return invalid_argument("--mean / --std: " + std::to_string(channels) +
                            " value(s) each for this model's input " + graph::type_string(input) +
                            ", got " + std::to_string(mean.size()) + " and " +
                            std::to_string(std.size()));
  for (double d : std)
    if (!(d > 0)) return invalid_argument("--std: " + std::to_string(d) + " must be positive");
  TT_ASSIGN_OR_RETURN(RgbImage image, read_image(path));
  const std::vector<float> rgb = resize_to_planar(image, s[2], s[3]);
  const size_t plane = static_cast<size_t>(s[2] * s[3]);
  graph::Tensor t = graph::Tensor::zeros(input.dtype, s);
  for (int64_t n = 0; n < s[0]; ++n)
    for (size_t c = 0; c < channels; ++c)
      for (size_t i = 0; i < plane; ++i) {
        const double v = channels == 3 ? rgb[c * plane + i]
                                       : (rgb[i] + rgb[plane + i] + rgb[2 * plane + i]) / 3.0;
        t.f32[(static_cast<size_t>(n) * channels + c) * plane + i] =
            static_cast<float>((v - mean[c]) / std[c]);
      }
  return t;
}

}  // namespace tensortune::workflow
