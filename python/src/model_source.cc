#include "python/src/model_source.h"

namespace tensortune::python {

workflow::ModelOptions model_options(const py::handle& model, const py::handle& input_shapes) {
  workflow::ModelOptions flags;
  if (!is_path_like(model))
    raise(invalid_argument("model: " + py::repr(model).cast<std::string>() +
                           " is not a zoo name or an ONNX file's path"));
  flags.model = path_arg(model, "model");
  if (input_shapes.is_none()) return flags;
  if (!py::isinstance<py::dict>(input_shapes))
    raise(invalid_argument("input_shapes: " + py::repr(input_shapes).cast<std::string>() +
                           " is not a dict {input name: shape}"));
  for (auto [name, shape] : py::reinterpret_borrow<py::dict>(input_shapes)) {
    if (!py::isinstance<py::str>(name))
      raise(invalid_argument("input_shapes: key " + py::repr(name).cast<std::string>() +
                             " is not an input name"));
    std::string text;
    if (!py::isinstance<py::sequence>(shape) || py::isinstance<py::str>(shape))
      raise(invalid_argument("input_shapes['" + name.cast<std::string>() +
                             "']: " + py::repr(shape).cast<std::string>() + " is not a shape"));
    for (auto d : shape) {
      if (!py::isinstance<py::int_>(d))
        raise(invalid_argument("input_shapes['" + name.cast<std::string>() + "']: " +
                               py::repr(shape).cast<std::string>() + " is not a tuple of ints"));
      text += (text.empty() ? "" : "x") + std::to_string(d.cast<int64_t>());
    }
    flags.input_shapes.push_back(name.cast<std::string>() + "=" + text);
  }
  return flags;
}

bool is_path_like(const py::handle& v) {
  return py::isinstance<py::str>(v) || py::hasattr(v, "__fspath__");
}

std::string path_arg(const py::handle& v, const char* name) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::hasattr(v, "__fspath__"))
    return py::module_::import("os").attr("fspath")(v).cast<std::string>();
  raise(invalid_argument(std::string(name) + ": " + py::repr(v).cast<std::string>() +
                         " is not a str or a path"));
}

std::string optional_path_arg(const py::handle& v, const char* name) {
  return v.is_none() ? std::string() : path_arg(v, name);
}

}  // namespace tensortune::python
