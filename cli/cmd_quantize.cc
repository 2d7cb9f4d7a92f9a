// `tensortune quantize MODEL.onnx -o MODEL.int8.onnx`: post-training static quantization into
// ONNX's QDQ form; the job is workflow::quantize_model.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/option_groups.h"
#include "workflow/quantize.h"

namespace tensortune::cli {
namespace {

/// "in [-127, 127] per output channel", or for a mix "in [-64, 64] in 40 of 52 weight tensors,
/// [-127, 127] in the rest, per output channel".
std::string weight_summary(const frontend::QuantizeReport& r) {
  const std::string per = r.per_channel ? "per output channel" : "per tensor";
  if (r.reduced == 0) return "in [-127, 127] " + per;
  if (r.full == 0) return "in [-64, 64] " + per;
  return "in [-64, 64] in " + std::to_string(r.reduced) + " of " +
         std::to_string(r.reduced + r.full) + " weight tensors, [-127, 127] in the rest, " + per;
}

}  // namespace

void add_quantize_command(CLI::App& app, int& exit_code) {
  auto job = std::make_shared<workflow::QuantizeJob>();
  CLI::App* c = app.add_subcommand(
      "quantize",
      "Quantize an ONNX model into ONNX's QDQ form: int8 weights, uint8 activations calibrated "
      "min-max");
  c->add_option("model", job->model.model, "the float ONNX model")->required();
  c->add_option("--input-shape", job->model.input_shapes,
                "NAME=1x3x224x224: fixes an input's shape (required for dynamic dimensions)");
  c->add_option("-o,--output", job->output, "the QDQ model to write")->required();
  c->add_option("--calibrate", job->calibrate,
                "random (deterministic uniform data in [-1, 1)) or a folder of .npy files and "
                ".png / .jpg images, one sample each (a model of one input; images are resized "
                "to its height and width and normalised with --mean and --std)")
      ->capture_default_str();
  c->add_option("--mean", job->images.mean,
                "images: per-channel mean subtracted from pixels scaled to [0, 1] (R,G,B; one "
                "value for a grey input)")
      ->delimiter(',')
      ->capture_default_str();
  c->add_option("--std", job->images.std, "images: per-channel divisor after the mean (R,G,B)")
      ->delimiter(',')
      ->capture_default_str();
  c->add_option("--samples", job->samples, "random calibration samples")
      ->check(at_least(1))
      ->capture_default_str();
  c->add_option("--percentile", job->percentile,
                "activation ranges: 100 = min-max over the samples; below 100 (99.99) the mean "
                "of each sample's (100 - p)th and pth percentiles, ignoring rare outliers")
      ->capture_default_str();
  c->add_flag("!--per-tensor", job->per_channel,
              "one weight scale per tensor instead of one per output channel (per channel needs "
              "opset 13; older models get per tensor)");
  auto reduce_range = std::make_shared<std::string>();
  c->add_flag("--reduce-range{all}", *reduce_range,
              "weights in [-64, 64] instead of [-127, 127] (ONNX Runtime's reduce_range): half "
              "the weights' resolution, and on CPUs without VNNI (AVX2) kernels that multiply "
              "bytes directly, about 1.3x faster and still exact (full-range weights would "
              "saturate their 16-bit pair sums there). --reduce-range=auto narrows only the "
              "layers whose output noise grows by at most --noise-growth")
      ->check(CLI::IsMember({"all", "auto"}));
  c->add_option("--noise-growth", job->noise_growth,
                "--reduce-range=auto: how much a layer's output noise (from rounding its "
                "activations and weights, estimated on the calibration samples) may grow when "
                "its weights are narrowed; 1.1 = 10%")
      ->capture_default_str();
  c->add_flag("!--no-bias-correction", job->bias_correction,
              "keep the float biases as they are; by default each Conv/Gemm bias (and a MatMul's, "
              "the Add after it) cancels the mean output error of its rounded weights on the "
              "calibration samples");
  c->add_flag("--quantize-outputs", job->quantize_outputs,
              "also quantize each layer's output (after a Relu or Clip that alone reads it), "
              "residual additions of quantized values and max pools of them, as ONNX Runtime's "
              "quantizer does: ONNX Runtime then finds DequantizeLinear -> Conv -> QuantizeLinear "
              "and runs its integer QLinearConv (without it, it runs such a model's convolutions "
              "in float32 on dequantized values). One more rounding per such value");
  c->add_flag("--allow-none", job->allow_none,
              "write the model even when no node could be quantized (by default that is an "
              "error naming why for the first nodes, and nothing is written)");
  c->footer(
      "\nEvery Conv, Gemm and MatMul whose weight is an initializer (or a Constant node, or a "
      "cast, reshape or transpose of constants: folded into initializers first) reads an int8 "
      "copy of it "
      "(symmetric, per output channel) through DequantizeLinear, and its activation through a "
      "QuantizeLinear -> DequantizeLinear pair (uint8, per tensor) whose range is the min-max "
      "over the calibration samples; biases stay float, corrected for the weights' mean rounding "
      "error. ONNX Runtime and tensortune both run the result:\n"
      "  tensortune quantize resnet50.onnx -o resnet50.int8.onnx --calibrate images/\n"
      "  tensortune quantize resnet50.onnx -o fast.int8.onnx --calibrate images/ "
      "--reduce-range=auto\n"
      "  tensortune run --model resnet50.int8.onnx --input input=x.npy");
  c->callback([&exit_code, job, reduce_range] {
    if (*reduce_range == "all") job->reduce_range = frontend::ReduceRange::kAll;
    if (*reduce_range == "auto") job->reduce_range = frontend::ReduceRange::kWhereQuiet;
    auto report = workflow::quantize_model(*job);
    if (!report) {
      exit_code = report_error(report.error());
      return;
    }
    std::printf(
        "quantized %d of %d Conv/Gemm/MatMul nodes (weights int8 %s, activations uint8 per "
        "tensor, %s calibrated, %d biases corrected); wrote %s\n",
        report->quantized, report->candidates, weight_summary(*report).c_str(),
        job->percentile >= 100 ? "min-max"
                               : ("percentile " + std::to_string(job->percentile)).c_str(),
        report->bias_corrected, job->output.c_str());
    if (report->batch_norms_folded > 0)
      std::printf("  folded %d batch norm%s into the convolutions before them\n",
                  report->batch_norms_folded, report->batch_norms_folded == 1 ? "" : "s");
    if (report->outputs_quantized > 0)
      std::printf("  %d layer outputs, residual sums and pools quantized where computed\n",
                  report->outputs_quantized);
    if (report->folded > 0)
      std::printf(
          "  folded %d constant node%s (weights written as Constant nodes and their "
          "casts, reshapes, transposes) into initializers first\n",
          report->folded, report->folded == 1 ? "" : "s");
    for (const auto& s : report->kept_full_range)
      std::printf("  kept in [-127, 127]: %s\n", s.c_str());
    for (const auto& s : report->skipped) std::printf("  left in float: %s\n", s.c_str());
    if (job->calibrate == "random" && report->quantized > 0)
      std::printf(
          "note: calibrated on %d random samples (uniform in [-1, 1)), whose activation ranges "
          "and means need not match real inputs'; for a model you deploy, calibrate on real "
          "ones: --calibrate DIR (.npy files or images)\n",
          job->samples);
  });
}

}  // namespace tensortune::cli
