#pragma once
/// \file
/// `tensortune quantize`: post-training static quantization of an ONNX model into ONNX's QDQ
/// form (frontend/onnx_quantizer.h), with its calibration samples: deterministic random data, or
/// a folder of .npy files and images (one sample each, for a model with one input; an image is
/// resized to the input's height and width and normalised with `mean` and `std`).
#include <string>

#include "compiler/frontend/onnx_quantizer.h"
#include "workflow/model_source.h"

namespace tensortune::workflow {

struct QuantizeJob {
  ModelOptions model;                ///< an ONNX file, input shapes, limits
  std::string output;                ///< the QDQ model written
  std::string calibrate = "random";  ///< "random" or a folder of .npy / .png / .jpg files
  /// Images: per channel (R, G, B; one value for grey inputs), on pixels scaled to [0, 1]:
  /// (pixel - mean) / std. ImageNet's by default, as torchvision's models expect.
  std::vector<double> mean = {0.485, 0.456, 0.406};
  std::vector<double> std = {0.229, 0.224, 0.225};
  int samples = 8;  ///< random samples (uniform in [-1, 1) for float inputs)
  bool per_channel = true;
  double percentile = 100;  ///< 100: min-max; below: see QuantizeOptions::percentile
};

Expected<frontend::QuantizeReport> quantize_model(const QuantizeJob& job);

}  // namespace tensortune::workflow
