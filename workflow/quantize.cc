#include "workflow/quantize.h"

#include <algorithm>
#include <filesystem>

#include "support/image_io.h"
#include "support/npy.h"
#include "workflow/image_input.h"

namespace tensortune::workflow {

namespace fs = std::filesystem;

namespace {

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
      TT_ASSIGN_OR_RETURN(graph::Tensor t, image_tensor(f.string(), model.type(input), job.images));
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
  options.allow_none = job.allow_none;
  options.quantize_outputs = job.quantize_outputs;
  options.reduce_range = job.reduce_range;
  options.noise_growth = job.noise_growth;
  options.bias_correction = job.bias_correction;
  if (!(job.noise_growth >= 1))
    return invalid_argument("--noise-growth = " + std::to_string(job.noise_growth) +
                            ": a factor of 1 or more (1.1: a layer's output noise may grow 10%)");
  options.percentile = job.percentile;
  TT_ASSIGN_OR_RETURN(options.calibration, calibration_samples(model, job));
  options.import.limits = job.model.limits;
  for (graph::ValueId id : model.inputs())
    options.import.input_shapes[model.value(id).name] = model.type(id).shape;
  return frontend::quantize_onnx_file(job.model.model, job.output, options);
}

}  // namespace tensortune::workflow
