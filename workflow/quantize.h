#pragma once
/// \file
/// `tensortune quantize`: post-training static quantization of an ONNX model into ONNX's QDQ
/// form (frontend/onnx_quantizer.h), with its calibration samples: deterministic random data, or
/// a folder of .npy files and images (one sample each, for a model with one input; an image is
/// resized to the input's height and width and normalised: workflow/image_input.h).
#include <string>

#include "compiler/frontend/onnx_quantizer.h"
#include "workflow/image_input.h"
#include "workflow/model_source.h"

namespace tensortune::workflow {

struct QuantizeJob {
  ModelOptions model;                ///< an ONNX file, input shapes, limits
  std::string output;                ///< the QDQ model written
  std::string calibrate = "random";  ///< "random" or a folder of .npy / .png / .jpg files
  ImageNormalization images;         ///< how calibration images become input tensors
  int samples = 8;                   ///< random samples (uniform in [-1, 1) for float inputs)
  bool per_channel = true;
  /// Weights in [-64, 64]: in every layer, or where it adds little noise (see QuantizeOptions).
  frontend::ReduceRange reduce_range = frontend::ReduceRange::kNone;
  double noise_growth = 1.10;
  bool bias_correction = true;
  double percentile = 100;        ///< 100: min-max; below: see QuantizeOptions::percentile
  bool allow_none = false;        ///< write the model even when no node could be quantized
  bool quantize_outputs = false;  ///< also the layers' outputs (QuantizeOptions::quantize_outputs)
};

Expected<frontend::QuantizeReport> quantize_model(const QuantizeJob& job);

}  // namespace tensortune::workflow
