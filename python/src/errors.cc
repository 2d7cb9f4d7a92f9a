// Exception classes: tensortune.Error (a RuntimeError) and, where a Python habit exists, a
// subclass that is also the built-in a Python user would catch (ValueError for a bad argument,
// LookupError for something not found, IndexError for an index out of range).
#include <Python.h>

#include "python/src/common.h"

namespace tensortune::python {

namespace {

PyObject* g_error = nullptr;
PyObject* g_invalid_argument = nullptr;
PyObject* g_not_found = nullptr;
PyObject* g_out_of_range = nullptr;
PyObject* g_unavailable = nullptr;

PyObject* new_class(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qualified = std::string("tensortune.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

PyObject* class_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return g_invalid_argument;
    case ErrorCode::kNotFound:
      return g_not_found;
    case ErrorCode::kOutOfRange:
      return g_out_of_range;
    case ErrorCode::kUnavailable:
      return g_unavailable;
    default:
      return g_error;
  }
}

}  // namespace

void bind_errors(py::module_& m) {
  g_error = new_class(m, "Error", PyExc_RuntimeError,
                      "Every error tensortune reports; the message is what the CLI prints.");
  const auto two = [](PyObject* a, PyObject* b) {
    return py::make_tuple(py::handle(a), py::handle(b)).release().ptr();
  };
  g_invalid_argument = new_class(m, "InvalidArgumentError", two(g_error, PyExc_ValueError),
                                 "A value that is not accepted; the message names it.");
  g_not_found = new_class(m, "NotFoundError", two(g_error, PyExc_LookupError),
                          "A file, model, input or record that does not exist.");
  g_out_of_range = new_class(m, "OutOfRangeError", two(g_error, PyExc_IndexError),
                             "An index outside its range.");
  g_unavailable = new_class(m, "UnavailableError", g_error,
                            "A tracker, device or database that could not be reached or used.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ErrorException& e) {
      PyErr_SetString(class_for(e.error().code), e.error().message.c_str());
    }
  });
}

}  // namespace tensortune::python
