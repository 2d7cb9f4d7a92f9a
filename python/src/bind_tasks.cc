// tensortune.Task, ConfigSpace, Config and extract_tasks: AutoTVM's task and config-space
// objects (len, indexing, entity as a dict).
#include <pybind11/stl.h>

#include "compiler/codegen/llvm/kernel.h"
#include "python/src/model_source.h"
#include "python/src/objects.h"
#include "records/autotvm_log.h"
#include "tuner/task_extraction.h"
#include "workflow/model_source.h"
#include "workflow/model_tasks.h"
#include "workflow/op_task.h"

namespace tensortune::python {

namespace ss = schedule_space;

std::shared_ptr<const ss::ConfigSpace> PyTask::space() const {
  if (!space_)
    space_ = std::make_shared<const ss::ConfigSpace>(unwrap(ss::make_config_space(task)));
  return space_;
}

py::object knob_value_to_python(const ss::KnobValue& value) {
  return std::visit([](const auto& v) -> py::object { return py::cast(v); }, value);
}

py::dict entity_to_python(const ss::Entity& entity) {
  py::dict out;
  for (const auto& [name, value] : entity) out[py::str(name)] = knob_value_to_python(value);
  return out;
}

ss::Entity entity_from_python(const py::handle& entity) {
  std::vector<std::pair<std::string, py::handle>> items;
  if (py::isinstance<py::dict>(entity)) {
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(entity)) {
      if (!py::isinstance<py::str>(k))
        raise(invalid_argument("entity: knob name " + py::repr(k).cast<std::string>() +
                               " is not a str"));
      items.emplace_back(k.cast<std::string>(), v);
    }
  } else if (py::isinstance<py::list>(entity) || py::isinstance<py::tuple>(entity)) {
    for (auto item : entity) {  // AutoTVM's [name, kind, value]
      auto seq = py::reinterpret_borrow<py::sequence>(item);
      if (!py::isinstance<py::sequence>(item) || py::len(seq) != 3 ||
          !py::isinstance<py::str>(seq[0]))
        raise(invalid_argument("entity: " + py::repr(item).cast<std::string>() +
                               " is not [knob, kind, value]"));
      items.emplace_back(seq[0].cast<std::string>(), seq[2]);
    }
  } else {
    raise(invalid_argument("entity: " + py::repr(entity).cast<std::string>() +
                           " is not a dict of knob values"));
  }
  ss::Entity out;
  for (const auto& [name, v] : items) {
    if (py::isinstance<py::bool_>(v)) {
      out.emplace_back(name, v.cast<bool>());
    } else if (py::isinstance<py::int_>(v)) {
      out.emplace_back(name, v.cast<int64_t>());
    } else if (py::isinstance<py::str>(v)) {
      out.emplace_back(name, v.cast<std::string>());
    } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
      std::vector<int64_t> sizes;
      for (auto x : v) {
        if (!py::isinstance<py::int_>(x))
          raise(invalid_argument("entity: knob '" + name + "' value " +
                                 py::repr(v).cast<std::string>() + " is not a list of ints"));
        sizes.push_back(x.cast<int64_t>());
      }
      out.emplace_back(name, std::move(sizes));
    } else {
      raise(invalid_argument("entity: knob '" + name + "' value " +
                             py::repr(v).cast<std::string>() +
                             " is not a list of ints, an int, a bool or a str"));
    }
  }
  return out;
}

namespace {

std::string int_list(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out;
  for (int64_t v : shape) out += (out.empty() ? "" : "x") + std::to_string(v);
  return out;
}

PyTask make_task(const std::string& op, const std::vector<int64_t>& data,
                 const std::vector<int64_t>& weight, const std::vector<int64_t>& strides,
                 const std::vector<int64_t>& pads, const std::vector<int64_t>& dilation,
                 const std::string& target, int weight_bits, const std::string& precision) {
  workflow::OpArgs args;
  args.weight_bits = weight_bits;
  args.precision = precision;
  args.op = op;
  args.target = target;
  args.strides = int_list(strides);
  args.pads = int_list(pads);
  args.dilation = int_list(dilation);
  // The CLI's parser checks the shapes' texts; going through it keeps the messages the same.
  auto data_shape = unwrap(workflow::parse_shape(shape_text(data), "data"));
  auto weight_shape = unwrap(workflow::parse_shape(shape_text(weight), "weight"));
  return PyTask(unwrap(workflow::make_op_task(args, data_shape, weight_shape)));
}

struct PySpace {
  std::shared_ptr<const ss::ConfigSpace> space;
};

PyConfig config_at(const PySpace& s, int64_t index) {
  if (index < 0) index += s.space->size();  // Python's negative indices
  return PyConfig{s.space, unwrap(s.space->config_at(index))};
}

std::string task_repr(const PyTask& t) {
  return "Task(" + t.task.template_name + ", " + ss::describe_workload(t.task.workload) + ", '" +
         t.task.target.spec + "')";
}

}  // namespace

void bind_tasks(py::module_& m) {
  py::class_<PyConfig>(m, "Config", "A point of a task's config space.")
      .def_property_readonly(
          "index", [](const PyConfig& c) { return c.config.index; },
          "flat index in the space (AutoTVM's config index)")
      .def_property_readonly(
          "entity",
          [](const PyConfig& c) { return entity_to_python(c.space->entity_of(c.config)); },
          "{knob: value}: lists for splits, ints, bools or strs for the others")
      .def_property_readonly(
          "valid", [](const PyConfig& c) { return c.space->is_valid(c.config); },
          "whether the template can build it (tuners never propose invalid points)")
      .def("__str__", [](const PyConfig& c) { return c.space->describe(c.config); })
      .def("__repr__",
           [](const PyConfig& c) {
             return "Config(" + std::to_string(c.config.index) + ": " +
                    c.space->describe(c.config) + ")";
           })
      .def("__eq__", [](const PyConfig& a, const PyConfig& b) {
        return a.space->template_name() == b.space->template_name() && a.config == b.config;
      });

  py::class_<PySpace>(m, "ConfigSpace",
                      "The product of a template's knobs, with AutoTVM's flat index (first knob "
                      "fastest).")
      .def(
          "__len__", [](const PySpace& s) { return s.space->size(); },
          "points in the space, valid or not (AutoTVM's range_length)")
      .def("__getitem__", &config_at, py::arg("index"))
      .def_property_readonly("template_name",
                             [](const PySpace& s) { return s.space->template_name(); })
      .def(
          "valid_count", [](const PySpace& s) { return s.space->valid_count(); },
          "points the template can build")
      .def(
          "offered_count", [](const PySpace& s) { return s.space->offered_count(); },
          "valid points the tuners propose on the task's CPU (its registers and FMA pipes; "
          "docs/cpu_model.md)")
      .def_property_readonly(
          "knobs",
          [](const PySpace& s) {
            py::list out;
            for (const ss::Knob& k : s.space->knobs()) {
              py::list options;
              for (const auto& o : k.options) options.append(knob_value_to_python(o));
              out.append(py::dict(py::arg("name") = k.name,
                                  py::arg("kind") = ss::knob_kind_tag(k.kind),
                                  py::arg("options") = options));
            }
            return out;
          },
          "the knobs: name, kind (sp, ot, an) and candidate values, in index order")
      .def(
          "config",
          [](const PySpace& s, const py::handle& entity) {
            return PyConfig{s.space,
                            unwrap(s.space->config_from_entity(entity_from_python(entity)))};
          },
          py::arg("entity"),
          "the config of an entity ({knob: value}, or AutoTVM's [[knob, kind, value], ...]); "
          "omitted knobs take their first candidate")
      .def("__repr__", [](const PySpace& s) {
        return "ConfigSpace(" + s.space->template_name() + ", " + std::to_string(s.space->size()) +
               " points)";
      });

  py::class_<PyTask>(m, "Task",
                     "A tuning task: a template, a workload and a target. Built from an "
                     "operator's shapes (as tune-op takes them) or taken from a model "
                     "(extract_tasks).")
      .def(py::init(&make_task), py::arg("op"), py::kw_only(), py::arg("data"), py::arg("weight"),
           py::arg("strides") = std::vector<int64_t>{1, 1},
           py::arg("pads") = std::vector<int64_t>{0, 0, 0, 0},
           py::arg("dilation") = std::vector<int64_t>{1, 1}, py::arg("target") = "llvm",
           py::arg("weight_bits") = 8, py::arg("precision") = "",
           "op: a template's name or op name (`tensortune tune-op --help` lists them), or the "
           "operator (conv2d, "
           "dense: its backend's first template); data/weight: NCHW and OIHW shapes for conv2d, "
           "(M, K) and (N, "
           "K) for dense; pads: 1, 2 or 4 values (top, left, bottom, right); weight_bits: 7 for "
           "an int8 template's task of weights in [-64, 64] (as quantize's reduce_range writes); "
           "precision: 'tf32', 'fp16', 'bf16' or '3xtf32' for a tensor-core task (a CUDA target; "
           "op='dense' then picks the tensor-core template)")
      .def_static(
          "from_workload_key",
          [](const std::string& key, const std::string& target) {
            return PyTask(unwrap(
                records::task_from_workload_key(key, target, codegen::host_target().vector_lanes)));
          },
          py::arg("workload_key"), py::arg("target") = "llvm -keys=cpu",
          "the task of a record's workload key (AutoTVM's [task_name, args] JSON)")
      .def_property_readonly("template_name", [](const PyTask& t) { return t.task.template_name; })
      .def_property_readonly("workload_key",
                             [](const PyTask& t) { return ss::workload_key(t.task); })
      .def_property_readonly("target", [](const PyTask& t) { return t.task.target.spec; })
      .def_property_readonly(
          "precision",
          [](const PyTask& t) { return ss::precision_name(ss::precision_of(t.task.workload)); },
          "float32, tf32, float16, bfloat16, or a quantized one ('uint8 x int8 -> int32')")
      .def_property_readonly(
          "flop", [](const PyTask& t) { return ss::task_flop(t.task); },
          "floating-point operations of one run")
      .def_property_readonly("workload",
                             [](const PyTask& t) { return ss::describe_workload(t.task.workload); })
      .def_property_readonly(
          "nodes", [](const PyTask& t) { return t.nodes; },
          "the model's nodes that run this workload (extract_tasks)")
      .def_property_readonly(
          "config_space", [](const PyTask& t) { return PySpace{t.space()}; },
          "the template's config space for this workload")
      .def(
          "default_config",
          [](const PyTask& t) {
            auto space = t.space();
            return PyConfig{space, ss::default_config(t.task, *space)};
          },
          "the template's fallback config (what an untuned workload runs)")
      .def("__repr__", &task_repr);

  m.def(
      "extract_tasks",
      [](const py::object& model, const std::string& target, const py::object& input_shapes,
         const std::vector<std::string>& exclude_algorithms, const std::string& precision) {
        workflow::ModelOptions flags = model_options(model, input_shapes);
        flags.excluded_algorithms = exclude_algorithms;
        flags.precision = precision;
        const ss::Target t = unwrap(workflow::op_target(target));
        std::vector<PyTask> out;
        {
          py::gil_scoped_release release;
          // A range of lengths in input_shapes: every bucket's tasks, as `tasks` lists them.
          auto extraction = unwrap(workflow::extract_model_tasks(flags, t));
          for (auto& e : extraction.tasks) out.emplace_back(e.task, e.nodes);
        }
        return out;
      },
      py::arg("model"), py::kw_only(), py::arg("target") = "llvm",
      py::arg("input_shapes") = py::none(),
      py::arg("exclude_algorithms") = std::vector<std::string>{}, py::arg("precision") = "fp32",
      "The tunable operators of a model (a zoo name or an ONNX file) as tasks, deduplicated by "
      "workload, in first-use order: what `tensortune tasks --model` lists. exclude_algorithms: "
      "template algorithms to leave out (e.g. ['winograd']), as --exclude-algorithm; "
      "input_shapes with a range(1, 513) in a shape: every sequence bucket's tasks; precision: "
      "the tensor-core tasks compile(precision=) runs.");
}

}  // namespace tensortune::python
