// tensortune.compile, load and Network: a compiled network run on numpy arrays, timed and
// profiled with the CLI's protocol, saved as the CLI's .tt artifact. Inputs are copied once,
// from the array's buffer straight into the network's arena (a float32 C-contiguous array is
// read where it is; any other layout is made contiguous first); outputs are handed to numpy
// without a further copy.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>

#include "compiler/runtime/artifact.h"
#include "compiler/runtime/benchmark.h"
#include "compiler/runtime/executor.h"
#include "python/src/model_source.h"
#include "python/src/objects.h"
#include "support/tensor.h"
#include "workflow/model_source.h"

namespace tensortune::python {

namespace {

using runtime::CompiledNetwork;
using runtime::Executable;

py::array to_numpy(Tensor&& t) {
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  if (t.dtype == DType::kFloat32) {
    auto* owner = new std::vector<float>(std::move(t.f32));
    py::capsule free_it(owner, [](void* p) { delete static_cast<std::vector<float>*>(p); });
    return py::array_t<float>(shape, owner->data(), free_it);
  }
  auto* owner = new std::vector<int64_t>(std::move(t.i64));
  py::capsule free_it(owner, [](void* p) { delete static_cast<std::vector<int64_t>*>(p); });
  return py::array_t<int64_t>(shape, owner->data(), free_it);
}

std::string shape_list(const py::array& a) {
  std::string out = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i)
    out += (i ? ", " : "") + std::to_string(a.shape(i)) + (a.ndim() == 1 ? "," : "");
  return out + ")";
}

class Network {
 public:
  Network(std::shared_ptr<const CompiledNetwork> net, int threads)
      : net_(std::move(net)), threads_(threads > 0 ? threads : net_->threads) {}

  const CompiledNetwork& compiled() const { return *net_; }
  int threads() const { return threads_; }

  // Loaded on first use: object code linked into this process, the arena allocated.
  Executable& exe() {
    if (!exe_) {
      py::gil_scoped_release release;
      exe_ = unwrap(Executable::load(net_, threads_));
    }
    return *exe_;
  }

  // The arrays are checked and copied in with the GIL held (they are Python objects).
  void set_inputs(const py::dict& inputs) {
    Executable& e = exe();
    for (auto [key, value] : inputs) {
      if (!py::isinstance<py::str>(key))
        raise(invalid_argument("inputs: key " + py::repr(key).cast<std::string>() +
                               " is not an input name"));
      const std::string name = key.cast<std::string>();
      const graph::TensorType want = unwrap(e.input_type(name));
      if (!py::isinstance<py::array>(value))
        raise(invalid_argument(
            "input '" + name + "': " + py::str(py::type::of(value)).cast<std::string>() +
            " is not a numpy array (the network takes " + graph::type_string(want) + ")"));
      auto array = py::reinterpret_borrow<py::array>(value);
      const bool f32 = want.dtype == DType::kFloat32;
      const py::dtype dtype = f32 ? py::dtype::of<float>() : py::dtype::of<int64_t>();
      if (!array.dtype().is(dtype) && !array.dtype().equal(dtype))
        raise(invalid_argument("input '" + name + "' is a " +
                               py::str(array.dtype()).cast<std::string>() +
                               " array, the network takes " + graph::type_string(want) +
                               " (convert with .astype(numpy." + dtype_name(want.dtype) + "))"));
      graph::Shape shape(array.shape(), array.shape() + array.ndim());
      if (shape != want.shape)
        raise(invalid_argument("input '" + name + "' has shape " + shape_list(array) +
                               ", the network takes " + graph::type_string(want)));
      // One copy in all: from the array into the arena. A strided or misaligned array is made
      // contiguous first (numpy copies it).
      py::array contiguous = py::array::ensure(array, py::array::c_style);
      unwrap(e.set_input(name, want, contiguous.data()));
    }
  }

  py::dict run(const py::dict& inputs) {
    set_inputs(inputs);
    Executable& e = exe();
    std::vector<Tensor> outputs;
    {
      py::gil_scoped_release release;
      unwrap(e.run());
      outputs = e.outputs();
    }
    py::dict out;
    const graph::Graph& g = net_->graph;
    for (size_t i = 0; i < outputs.size(); ++i)
      out[py::str(g.output_name(i))] = to_numpy(std::move(outputs[i]));
    return out;
  }

  runtime::BenchResult bench(const py::object& inputs, int repeat, int64_t number,
                             double min_repeat_ms, bool profile) {
    if (repeat < 1)
      raise(invalid_argument("repeat = " + std::to_string(repeat) + ", must be >= 1"));
    if (number < 1)
      raise(invalid_argument("number = " + std::to_string(number) + ", must be >= 1"));
    if (!inputs.is_none()) {
      set_inputs(inputs.cast<py::dict>());
    } else {  // as `tensortune bench`: deterministic uniform data
      Executable& e = exe();
      for (auto in : net_->graph.inputs()) {
        Tensor a = Tensor::zeros(net_->graph.type(in).dtype, net_->graph.type(in).shape);
        if (a.dtype == DType::kFloat32) fill_uniform(a, 0);
        unwrap(e.set_input(net_->graph.value(in).name, a));
      }
    }
    runtime::BenchOptions o;
    o.repeat = repeat;
    o.number = number;
    o.min_repeat_ms = min_repeat_ms;
    o.profile = profile;
    Executable& e = exe();
    py::gil_scoped_release release;
    return unwrap(runtime::benchmark(e, o));
  }

  void save(const std::string& path) const {
    py::gil_scoped_release release;
    unwrap(runtime::write_network(*net_, path));
  }

 private:
  std::shared_ptr<const CompiledNetwork> net_;
  int threads_;
  std::unique_ptr<Executable> exe_;
};

py::dict bench_dict(const runtime::BenchResult& r) {
  return py::dict(py::arg("median_ms") = r.median_ms, py::arg("min_ms") = r.min_ms,
                  py::arg("max_ms") = r.max_ms, py::arg("round_ms") = r.round_ms,
                  py::arg("gflops") = r.gflops, py::arg("threads") = r.threads,
                  py::arg("repeat") = r.repeat, py::arg("number") = r.number,
                  py::arg("warmup_ms") = r.warmup_ms);
}

Network compile(const py::object& model, const py::object& records, int opt_level, int threads,
                const std::string& target, const py::object& input_shapes,
                const std::string& device_key, const std::vector<std::string>& exclude_algorithms,
                bool borrow) {
  if (opt_level < 0 || opt_level > 3)
    raise(invalid_argument("opt_level = " + std::to_string(opt_level) + ", must be 0..3"));
  if (threads < 1)
    raise(invalid_argument("threads = " + std::to_string(threads) + ", must be >= 1"));
  workflow::ModelOptions flags = model_options(model, input_shapes);
  flags.opt_level = opt_level;
  if (!records.is_none()) flags.records = path_arg(records, "records");
  flags.device_key = device_key;
  flags.target = target;
  flags.excluded_algorithms = exclude_algorithms;
  flags.no_borrow = !borrow;
  std::shared_ptr<const CompiledNetwork> net;
  {
    py::gil_scoped_release release;
    net = std::make_shared<const CompiledNetwork>(unwrap(workflow::compile_model(flags, threads)));
  }
  return Network(std::move(net), threads);
}

// run({'data': array}) and run(data=array) alike.
py::dict run_network(Network& n, const py::object& inputs, const py::kwargs& named) {
  py::dict all;
  if (!inputs.is_none()) {
    if (!py::isinstance<py::dict>(inputs))
      raise(invalid_argument("inputs: " + py::repr(inputs).cast<std::string>() +
                             " is not a dict {input name: numpy array}"));
    for (auto [k, v] : inputs.cast<py::dict>()) all[k] = v;
  }
  for (auto [k, v] : named) all[k] = v;
  return n.run(all);
}

py::dict profile_network(Network& n, const py::object& inputs, int repeat, int64_t number,
                         double min_repeat_ms) {
  auto r = n.bench(inputs, repeat, number, min_repeat_ms, true);
  py::dict out = bench_dict(r);
  py::list steps;
  for (const auto& s : r.steps)
    steps.append(
        py::dict(py::arg("label") = s.label, py::arg("kind") = runtime::step_kind_name(s.kind),
                 py::arg("calls") = s.calls, py::arg("mean_ms") = s.mean_ms,
                 py::arg("gflops") = s.gflops, py::arg("bytes") = s.bytes, py::arg("gbs") = s.gbs));
  out["steps"] = steps;
  out["profile_sum_ms"] = r.profile_sum_ms;
  out["triad_gbs"] = r.triad_gbs;
  out["table"] = runtime::format_profile(n.exe(), r);
  return out;
}

py::dict input_types(const Network& n) {
  py::dict out;
  const graph::Graph& g = n.compiled().graph;
  for (auto in : g.inputs())
    out[py::str(g.value(in).name)] =
        py::make_tuple(py::tuple(py::cast(g.type(in).shape)), dtype_name(g.type(in).dtype));
  return out;
}

py::list step_list(const Network& n) {
  py::list out;
  for (const auto& s : n.compiled().steps)
    out.append(py::dict(py::arg("label") = s.label,
                        py::arg("kind") = runtime::step_kind_name(s.kind),
                        py::arg("flop") = s.flop));
  return out;
}

py::list schedule_list(const Network& n) {
  py::list out;
  for (const auto& s : n.compiled().schedules)
    out.append(py::dict(py::arg("workload") = s.workload, py::arg("schedule") = s.schedule,
                        py::arg("tuned") = s.tuned, py::arg("borrowed_from") = s.borrowed_from));
  return out;
}

}  // namespace

void bind_network(py::module_& m) {
  py::class_<Network>(m, "Network",
                      "A compiled network (tensortune.compile or tensortune.load). run() takes "
                      "numpy arrays by input name and returns the outputs by name.")
      .def("run", &run_network, py::arg("inputs") = py::none(),
           "run({'data': array}) or run(data=array): the outputs as {name: numpy array}")
      .def(
          "bench",
          [](Network& n, const py::object& inputs, int repeat, int64_t number,
             double min_repeat_ms) {
            return bench_dict(n.bench(inputs, repeat, number, min_repeat_ms, false));
          },
          py::kw_only(), py::arg("inputs") = py::none(), py::arg("repeat") = 10,
          py::arg("number") = 1, py::arg("min_repeat_ms") = 100.0,
          "times the network as `tensortune bench` does (a warm-up run, then `repeat` rounds "
          "of `number` runs, number grown until a round lasts min_repeat_ms): median_ms, "
          "min_ms, max_ms, round_ms, gflops, ...; random inputs unless given")
      .def("profile", &profile_network, py::kw_only(), py::arg("inputs") = py::none(),
           py::arg("repeat") = 10, py::arg("number") = 1, py::arg("min_repeat_ms") = 100.0,
           "bench() plus the time of every step ('steps', and 'table' as `bench --profile` "
           "prints it)")
      .def(
          "save", [](const Network& n, const py::handle& path) { n.save(path_arg(path, "path")); },
          py::arg("path"), "writes the .tt artifact that `tensortune run` and load() read")
      .def_property_readonly("model", [](const Network& n) { return n.compiled().model; })
      .def_property_readonly(
          "target", [](const Network& n) { return runtime::describe_target(n.compiled()); })
      .def_property_readonly("opt_level", [](const Network& n) { return n.compiled().opt_level; })
      .def_property_readonly("threads", &Network::threads)
      .def_property_readonly("inputs", &input_types, "{name: (shape, dtype)}")
      .def_property_readonly("outputs",
                             [](const Network& n) {
                               std::vector<std::string> out;
                               const graph::Graph& g = n.compiled().graph;
                               for (size_t i = 0; i < g.outputs().size(); ++i)
                                 out.push_back(g.output_name(i));
                               return out;
                             })
      .def_property_readonly("steps", &step_list,
                             "one per fusion group: label, kind (kernel, native, interpret), flop")
      .def_property_readonly("schedules", &schedule_list,
                             "each tuned workload's schedule and whether it came from a record")
      .def("__repr__", [](const Network& n) {
        return "Network('" + n.compiled().model + "', " + runtime::describe_target(n.compiled()) +
               ", opt_level=" + std::to_string(n.compiled().opt_level) +
               ", threads=" + std::to_string(n.threads()) + ")";
      });

  m.def("compile", &compile, py::arg("model"), py::kw_only(), py::arg("records") = py::none(),
        py::arg("opt_level") = 3, py::arg("threads") = 1, py::arg("target") = "llvm",
        py::arg("input_shapes") = py::none(), py::arg("device_key") = "",
        py::arg("exclude_algorithms") = std::vector<std::string>{}, py::arg("borrow") = true,
        "Compiles a model (a zoo name or an ONNX file) as `tensortune compile` does: records= a "
        "record DB or an AutoTVM log (each workload's best config; untuned ones borrow the "
        "nearest tuned one unless borrow=False), or none for default configs; exclude_algorithms: "
        "template algorithms no node runs (e.g. ['winograd']), as --exclude-algorithm.");
  m.def(
      "load",
      [](const py::handle& path, int threads) {
        const std::string p = path_arg(path, "path");
        std::shared_ptr<const CompiledNetwork> net;
        {
          py::gil_scoped_release release;
          net = std::make_shared<const CompiledNetwork>(unwrap(runtime::read_network(p)));
        }
        return Network(std::move(net), threads);
      },
      py::arg("path"), py::kw_only(), py::arg("threads") = 0,
      "reads a .tt artifact (Network.save or `tensortune compile`); threads=0: its own count");
}

}  // namespace tensortune::python
