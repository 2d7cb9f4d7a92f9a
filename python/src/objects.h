#pragma once
/// \file
/// The C++ objects behind tensortune.Task and tensortune.Config, shared by the files that take
/// or return them.
#include <memory>
#include <string>
#include <vector>

#include "python/src/common.h"
#include "schedule_space/config_space.h"
#include "schedule_space/task.h"

namespace tensortune::python {

/// A tuning task and, when it came from a model, the graph nodes that run it. Its config space
/// is made on first use and shared with the configs taken from it.
struct PyTask {
  explicit PyTask(schedule_space::Task t, std::vector<std::string> n = {})
      : task(std::move(t)), nodes(std::move(n)) {}

  schedule_space::Task task;
  std::vector<std::string> nodes;
  std::shared_ptr<const schedule_space::ConfigSpace> space() const;

 private:
  mutable std::shared_ptr<const schedule_space::ConfigSpace> space_;
};

/// A point of a space; keeps its space alive.
struct PyConfig {
  std::shared_ptr<const schedule_space::ConfigSpace> space;
  schedule_space::Config config;
};

/// A knob value as Python sees it: a list of ints (split), an int, a bool or a str.
py::object knob_value_to_python(const schedule_space::KnobValue& value);
/// {knob: value}, in the space's knob order.
py::dict entity_to_python(const schedule_space::Entity& entity);
/// From {knob: value} (or AutoTVM's [[knob, kind, value], ...] list); the error names the knob.
schedule_space::Entity entity_from_python(const py::handle& entity);

}  // namespace tensortune::python
