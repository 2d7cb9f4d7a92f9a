// The native half of the `tensortune` package (python/tensortune/__init__.py re-exports it).
#include "python/src/common.h"

PYBIND11_MODULE(_tensortune, m) {
  m.doc() = "tensortune's C++ core: tasks, tuning, records, compilation and runs";
  m.attr("__version__") = TT_VERSION;  // the project's version (CMake)
  tensortune::python::bind_errors(m);
  tensortune::python::bind_tasks(m);
  tensortune::python::bind_tuning(m);
  tensortune::python::bind_records(m);
  tensortune::python::bind_network(m);
  tensortune::python::bind_quantize(m);
}
