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
      text += text.empty() ? "" : "x";
      // range(1, 513): a range of sequence lengths, 1..512 (compile --input-shape NAME=1x1..512).
      if (py::isinstance(d, py::module_::import("builtins").attr("range"))) {
        const int64_t start = d.attr("start").cast<int64_t>(),
                      stop = d.attr("stop").cast<int64_t>();
        if (d.attr("step").cast<int64_t>() != 1 || stop - 1 <= start)
          raise(invalid_argument("input_shapes['" + name.cast<std::string>() +
                                 "']: " + py::repr(d).cast<std::string>() +
                                 " is not a range of lengths (step 1, at least two of them)"));
        text += std::to_string(start) + ".." + std::to_string(stop - 1);
        continue;
      }
      if (!py::isinstance<py::int_>(d))
        raise(invalid_argument("input_shapes['" + name.cast<std::string>() +
                               "']: " + py::repr(shape).cast<std::string>() +
                               " is not a tuple of ints (and at most one range)"));
      text += std::to_string(d.cast<int64_t>());
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
