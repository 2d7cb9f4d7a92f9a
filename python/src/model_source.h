#pragma once
/// \file
/// A model argument as the Python functions take it: a zoo name or an ONNX path (str or
/// os.PathLike), with optional input shapes {name: (1, 3, 224, 224)}; becomes the CLI's flags so
/// that loading and its errors are the CLI's.
#include "cli/model_args.h"
#include "python/src/common.h"

namespace tensortune::python {

cli::ModelFlags model_flags(const py::handle& model, const py::handle& input_shapes);

}  // namespace tensortune::python
