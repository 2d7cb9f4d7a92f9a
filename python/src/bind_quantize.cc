// tensortune.quantize: an ONNX file into ONNX's QDQ form, as `tensortune quantize` does.
#include <pybind11/stl.h>

#include "python/src/model_source.h"
#include "python/src/objects.h"
#include "workflow/quantize.h"

namespace tensortune::python {

namespace {

// reduce_range: True, False, 'all' or 'auto' (the layers whose output noise allows it).
frontend::ReduceRange reduce_range_arg(const py::object& reduce_range) {
  if (py::isinstance<py::str>(reduce_range)) {
    const auto mode = reduce_range.cast<std::string>();
    if (mode != "auto" && mode != "all")
      throw py::value_error("reduce_range = '" + mode + "': True, False, 'all' or 'auto'");
    return mode == "auto" ? frontend::ReduceRange::kWhereQuiet : frontend::ReduceRange::kAll;
  }
  if (py::isinstance<py::bool_>(reduce_range))
    return reduce_range.cast<bool>() ? frontend::ReduceRange::kAll : frontend::ReduceRange::kNone;
  throw py::type_error("reduce_range: True, False, 'all' or 'auto'");
}

py::dict report_dict(const frontend::QuantizeReport& report) {
  return py::dict(
      py::arg("quantized") = report.quantized, py::arg("candidates") = report.candidates,
      py::arg("per_channel") = report.per_channel, py::arg("weight_max") = report.weight_max,
      py::arg("reduced") = report.reduced, py::arg("full") = report.full,
      py::arg("bias_corrected") = report.bias_corrected, py::arg("folded") = report.folded,
      py::arg("outputs_quantized") = report.outputs_quantized,
      py::arg("batch_norms_folded") = report.batch_norms_folded,
      py::arg("kept_full_range") = report.kept_full_range, py::arg("skipped") = report.skipped);
}

py::dict quantize(const py::handle& model, const py::handle& output, const py::handle& calibrate,
                  int samples, bool per_channel, const py::object& reduce_range, double percentile,
                  double noise_growth, bool bias_correction, bool allow_none, bool quantize_outputs,
                  const py::object& input_shapes) {
  workflow::QuantizeJob job;
  job.model = model_options(model, input_shapes);
  job.output = path_arg(output, "output");
  job.calibrate = py::isinstance<py::str>(calibrate) && calibrate.cast<std::string>() == "random"
                      ? "random"
                      : path_arg(calibrate, "calibrate");
  job.samples = samples;
  job.per_channel = per_channel;
  job.reduce_range = reduce_range_arg(reduce_range);
  job.percentile = percentile;
  job.noise_growth = noise_growth;
  job.bias_correction = bias_correction;
  job.allow_none = allow_none;
  job.quantize_outputs = quantize_outputs;
  frontend::QuantizeReport report;
  {
    py::gil_scoped_release release;
    report = unwrap(workflow::quantize_model(job));
  }
  return report_dict(report);
}

}  // namespace

void bind_quantize(py::module_& m) {
  m.def(
      "quantize", &quantize, py::arg("model"), py::arg("output"), py::kw_only(),
      py::arg("calibrate") = "random", py::arg("samples") = 8, py::arg("per_channel") = true,
      py::arg("reduce_range") = false, py::arg("percentile") = 100.0,
      py::arg("noise_growth") = 1.10, py::arg("bias_correction") = true,
      py::arg("allow_none") = false, py::arg("quantize_outputs") = false,
      py::arg("input_shapes") = py::none(),
      "Quantizes an ONNX file into ONNX's QDQ form as `tensortune quantize` does: int8 weights "
      "(per output channel), uint8 activations calibrated on `samples` random inputs or a folder "
      "of .npy files (calibrate=PATH); percentile < 100 ranges by percentiles instead of min-max; "
      "reduce_range=True keeps weights in [-64, 64] (exact byte kernels without VNNI), 'auto' "
      "only in the layers whose output noise grows by at most noise_growth; bias_correction "
      "cancels the rounded weights' mean output error through the biases. Weights written as "
      "Constant nodes (and casts, reshapes, transposes of constants) are folded into "
      "initializers first. A model none of whose nodes can be quantized raises ValueError "
      "naming why, unless allow_none=True. quantize_outputs=True also quantizes the layers' "
      "outputs, residual sums and max pools, as ONNX Runtime's quantizer does (ONNX Runtime "
      "then runs its integer kernels on the file). Returns {'quantized', 'candidates', "
      "'per_channel', "
      "'weight_max', 'reduced', 'full', 'bias_corrected', 'folded', 'batch_norms_folded', "
      "'outputs_quantized', "
      "'kept_full_range', 'skipped'}.");
}

}  // namespace tensortune::python
