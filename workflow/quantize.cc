#include "workflow/quantize.h"

#include <algorithm>
#include <filesystem>

#include "support/image_io.h"
#include "support/npy.h"

namespace tensortune::workflow {

namespace fs = std::filesystem;

namespace {

/// An image as the model's one input [N, C, H, W] (C = 3, or 1 for grey: the channels'
/// mean): resized, normalised, repeated over the batch.
Expected<graph::Tensor> image_sample(const std::string& path, const graph::TensorType& input,
                                     const QuantizeJob& job) {
  const graph::Shape& s = input.shape;
  if (s.size() != 4 || (s[1] != 3 && s[1] != 1) || input.dtype != graph::DType::kFloat32)
    return invalid_argument(path +
                            ": an image calibrates a float32 [N, 3 or 1, H, W] input, the "
                            "model's is " +
                            graph::type_string(input));
  const size_t channels = static_cast<size_t>(s[1]);
  if (job.mean.size() != channels || job.std.size() != channels)
    return invalid_argument("--mean / --std: " + std::to_string(channels) +
                            " value(s) each for this model's input " + graph::type_string(input) +
                            ", got " + std::to_string(job.mean.size()) + " and " +
                            std::to_string(job.std.size()));
  for (double d : job.std)
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
            static_cast<float>((v - job.mean[c]) / job.std[c]);
      }
  return t;
}

Expected<std::vector<std::map<std::string, graph::Tensor>>> calibration_samples(
    const graph::Graph& model, const QuantizeJob& job) {
  std::vector<std::map<std::string, graph::Tensor>> samples;
  if (job.calibrate == "random") {
    if (job.samples < 1)
      return invalid_argument("--samples = " + std::to_string(job.samples) +
                              ", must be at least 1");
    for (int s = 0; s < job.samples; ++s) {
      std::map<std::string, graph::Tensor> sample;
      for (graph::ValueId id : model.inputs()) {
        graph::Tensor t = graph::Tensor::zeros(model.type(id).dtype, model.type(id).shape);
        if (graph::is_float(t.dtype)) fill_uniform(t, static_cast<uint64_t>(s) + 1);
        sample[model.value(id).name] = std::move(t);
      }
      samples.push_back(std::move(sample));
    }
    return samples;
  }
  if (!fs::is_directory(job.calibrate))
    return invalid_argument("--calibrate = '" + job.calibrate +
                            "': neither 'random' nor a folder of .npy or image files");
  if (model.inputs().size() != 1)
    return invalid_argument(
        "--calibrate " + job.calibrate + ": the model has " +
        std::to_string(model.inputs().size()) +
        " inputs; a folder of .npy or image files calibrates a model of one input");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(job.calibrate))
    if (e.is_regular_file() && (e.path().extension() == ".npy" || is_image_path(e.path().string())))
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty())
    return invalid_argument("--calibrate " + job.calibrate +
                            " holds no .npy, .png, .jpg or .jpeg file");
  const graph::ValueId input = model.inputs()[0];
  for (const auto& f : files) {
    if (is_image_path(f.string())) {
      TT_ASSIGN_OR_RETURN(graph::Tensor t, image_sample(f.string(), model.type(input), job));
      samples.push_back({{model.value(input).name, std::move(t)}});
      continue;
    }
    TT_ASSIGN_OR_RETURN(graph::Tensor t, read_npy(f.string()));
    if (t.shape != model.type(input).shape || t.dtype != model.type(input).dtype)
      return invalid_argument(f.string() + " is " + graph::type_string(t.type()) + "; input '" +
                              model.value(input).name + "' is " +
                              graph::type_string(model.type(input)));
    samples.push_back({{model.value(input).name, std::move(t)}});
  }
  return samples;
}

}  // namespace

Expected<frontend::QuantizeReport> quantize_model(const QuantizeJob& job) {
  if (job.output.empty()) return invalid_argument("-o: the QDQ model's path is required");
  if (!fs::is_regular_file(job.model.model))
    return invalid_argument("--model = '" + job.model.model + "': quantize takes an ONNX file");
  TT_ASSIGN_OR_RETURN(graph::Graph model, load_model(job.model));
  frontend::QuantizeOptions options;
  options.per_channel = job.per_channel;
  options.percentile = job.percentile;
  TT_ASSIGN_OR_RETURN(options.calibration, calibration_samples(model, job));
  options.import.limits = job.model.limits;
  for (graph::ValueId id : model.inputs())
    options.import.input_shapes[model.value(id).name] = model.type(id).shape;
  return frontend::quantize_onnx_file(job.model.model, job.output, options);
}

}  // namespace tensortune::workflow
