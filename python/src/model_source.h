#pragma once
/// \file
/// A model argument as the Python functions take it: a zoo name or an ONNX path (str or
/// os.PathLike), with optional input shapes {name: (1, 3, 224, 224)}; becomes the workflow's
/// ModelOptions so that loading and its errors are the CLI's.
#include "python/src/common.h"
#include "workflow/model_source.h"

namespace tensortune::python {

workflow::ModelOptions model_options(const py::handle& model, const py::handle& input_shapes);

}  // namespace tensortune::python
