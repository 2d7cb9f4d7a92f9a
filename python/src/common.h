#pragma once
/// \file
/// What the binding files share: turning tensortune's errors-as-values into Python exceptions
/// (errors.cc maps each ErrorCode to a class of the module), and the registration functions,
/// one per file.
#include <pybind11/pybind11.h>

#include <exception>
#include <string>

#include "support/error.h"

namespace tensortune::python {

namespace py = pybind11;

/// A tensortune Error on its way to Python; the translator registered by bind_errors raises the
/// exception class of its code with the message the CLI would print after "error: ".
class ErrorException : public std::exception {
 public:
  explicit ErrorException(Error error) : error_(std::move(error)) {}
  const Error& error() const { return error_; }
  const char* what() const noexcept override { return error_.message.c_str(); }

 private:
  Error error_;
};

[[noreturn]] inline void raise(const Error& error) { throw ErrorException(error); }

template <class T>
T unwrap(Expected<T> value) {
  if (!value) raise(value.error());
  return std::move(value).value();
}
inline void unwrap(const Status& status) {
  if (!status.has_value()) raise(status.error());
}

/// Whether `v` is a str or an os.PathLike.
bool is_path_like(const py::handle& v);
/// A str or os.PathLike argument as text; otherwise an InvalidArgumentError naming `name`.
std::string path_arg(const py::handle& v, const char* name);
/// The same, with None as "".
std::string optional_path_arg(const py::handle& v, const char* name);

void bind_errors(py::module_& m);
void bind_tasks(py::module_& m);
void bind_tuning(py::module_& m);
void bind_records(py::module_& m);
void bind_network(py::module_& m);
void bind_quantize(py::module_& m);

}  // namespace tensortune::python
