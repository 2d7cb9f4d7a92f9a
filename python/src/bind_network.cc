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
#include "compiler/runtime/ranged_artifact.h"
#include "compiler/runtime/ranged_executor.h"
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

/// A ranged artifact's own part of a Network: the artifact (and its bytes, for save()).
struct Ranged {
  std::string bytes;
  std::shared_ptr<const runtime::RangedArtifact> artifact;
  std::unique_ptr<runtime::RangedExecutable> exe;
};

class Network {
 public:
  Network(std::shared_ptr<const CompiledNetwork> net, int threads)
      : net_(std::move(net)), threads_(threads > 0 ? threads : net_->threads) {}

  /// A ranged artifact's bytes, its shortest bucket loaded at once: `compiled()` is that
  /// bucket's network (what steps, schedules and the inputs' dtypes describe; no bucket decoded
  /// twice), run() takes any length of its range.
  static Network ranged(std::string bytes, const std::string& what, int threads) {
    auto ranged = std::make_shared<Ranged>();
    ranged->bytes = std::move(bytes);
    ranged->artifact = std::make_shared<const runtime::RangedArtifact>(
        unwrap(runtime::RangedArtifact::parse(ranged->bytes, what)));
    const int count = threads > 0 ? threads : ranged->artifact->threads();
    const Executable* shortest = nullptr;
    {
      py::gil_scoped_release release;
      ranged->exe = unwrap(runtime::RangedExecutable::load(ranged->artifact, count));
      shortest = unwrap(ranged->exe->bucket(0));
    }
    // Shares ownership with `ranged`, which holds the executable that holds the network.
    std::shared_ptr<const CompiledNetwork> net(ranged, &shortest->network());
    Network n(std::move(net), count);
    n.ranged_ = std::move(ranged);
    return n;
  }

  const CompiledNetwork& compiled() const { return *net_; }
  int threads() const { return threads_; }
  const runtime::RangedArtifact* ranged_artifact() const {
    return ranged_ ? ranged_->artifact.get() : nullptr;
  }

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

  /// A ranged network's inputs, copied into tensors (their length picks the bucket).
  std::map<std::string, Tensor> tensors(const py::dict& inputs) const {
    std::map<std::string, Tensor> out;
    const graph::Graph& g = net_->graph;
    for (auto [key, value] : inputs) {
      if (!py::isinstance<py::str>(key) || !py::isinstance<py::array>(value))
        raise(invalid_argument("inputs: " + py::repr(key).cast<std::string>() +
                               " is not an input name with a numpy array"));
      const std::string name = key.cast<std::string>();
      const graph::ValueId id = g.find_input(name);
      if (id == graph::kNoValue || name == graph::kSequenceMaskInput)
        raise(invalid_argument("input '" + name + "' is not one of the network's"));
      const bool f32 = g.type(id).dtype == DType::kFloat32;
      const py::dtype dtype = f32 ? py::dtype::of<float>() : py::dtype::of<int64_t>();
      auto array = py::array::ensure(py::reinterpret_borrow<py::array>(value), py::array::c_style);
      if (!array.dtype().equal(dtype))
        raise(invalid_argument("input '" + name + "' is a " +
                               py::str(array.dtype()).cast<std::string>() +
                               " array, the network "
                               "takes " +
                               dtype_name(g.type(id).dtype)));
      graph::TensorType type{g.type(id).dtype,
                             graph::Shape(array.shape(), array.shape() + array.ndim())};
      out[name] = graph::tensor_from_storage(type, array.data());
    }
    return out;
  }

  runtime::RangedExecutable& ranged_exe() { return *ranged_->exe; }

  py::dict named_outputs(std::vector<Tensor> outputs) const {
    py::dict out;
    const graph::Graph& g = net_->graph;
    for (size_t i = 0; i < outputs.size(); ++i)
      out[py::str(g.output_name(i))] = to_numpy(std::move(outputs[i]));
    return out;
  }

  py::dict run(const py::dict& inputs) {
    if (ranged_) {
      const auto tensors_in = tensors(inputs);
      runtime::RangedExecutable& e = ranged_exe();
      std::vector<Tensor> outputs;
      {
        py::gil_scoped_release release;
        outputs = unwrap(e.run(tensors_in));
      }
      return named_outputs(std::move(outputs));
    }
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
    if (ranged_) return bench_ranged(inputs, repeat, number, min_repeat_ms, profile);
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

  /// A ranged network timed on the inputs' length (or random ones at the range's top), in the
  /// bucket that holds it.
  runtime::BenchResult bench_ranged(const py::object& inputs, int repeat, int64_t number,
                                    double min_repeat_ms, bool profile) {
    std::map<std::string, Tensor> in;
    if (!inputs.is_none()) {
      in = tensors(inputs.cast<py::dict>());
    } else {
      const graph::Graph& g = net_->graph;  // the shortest bucket's, taken to the range's top
      const graph::SequenceRange& range = ranged_->artifact->plan().range;
      for (auto id : g.inputs()) {
        if (g.value(id).name == graph::kSequenceMaskInput) continue;
        graph::TensorType type = g.type(id);
        for (const auto& s : range.inputs)
          if (s.name == g.value(id).name) type.shape[static_cast<size_t>(s.axis)] = range.hi;
        in[g.value(id).name] = workflow::random_input(type);
      }
    }
    runtime::RangedExecutable& e = ranged_exe();
    runtime::BenchOptions o;
    o.repeat = repeat;
    o.number = number;
    o.min_repeat_ms = min_repeat_ms;
    o.profile = profile;
    py::gil_scoped_release release;
    Executable* bucket = unwrap(e.prepare(in));
    last_bench_ = bucket;
    return unwrap(runtime::benchmark(*bucket, o));
  }

  /// The executable the last bench timed (a ranged network's bucket), for its profile table.
  Executable& timed() { return last_bench_ ? *last_bench_ : exe(); }

  void save(const std::string& path) const {
    py::gil_scoped_release release;
    if (ranged_) {
      unwrap(runtime::write_artifact_bytes(ranged_->bytes, path));
      return;
    }
    unwrap(runtime::write_network(*net_, path));
  }

 private:
  std::shared_ptr<const CompiledNetwork> net_;
  int threads_;
  std::unique_ptr<Executable> exe_;
  std::shared_ptr<Ranged> ranged_;
  Executable* last_bench_ = nullptr;
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
                bool borrow, const std::string& sequence_buckets, const std::string& precision) {
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
  flags.sequence_buckets = sequence_buckets;
  flags.precision = precision;
  if (unwrap(workflow::sequence_range(flags))) {
    std::string bytes;
    {
      py::gil_scoped_release release;
      bytes = unwrap(workflow::compile_ranged_model(flags, threads));
    }
    return Network::ranged(std::move(bytes), flags.model, threads);
  }
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
  out["table"] = runtime::format_profile(n.timed(), r);
  return out;
}

py::dict input_types(const Network& n) {
  py::dict out;
  const graph::Graph& g = n.compiled().graph;
  const runtime::RangedArtifact* ranged = n.ranged_artifact();
  for (auto in : g.inputs()) {
    const std::string& name = g.value(in).name;
    if (name == graph::kSequenceMaskInput) continue;
    py::list shape = py::cast(g.type(in).shape);
    // A sequence axis is the range it takes: range(1, 513) for 1..512.
    if (ranged)
      for (const auto& s : ranged->plan().range.inputs)
        if (s.name == name)
          shape[static_cast<size_t>(s.axis)] =
              py::module_::import("builtins")
                  .attr("range")(ranged->plan().range.lo, ranged->plan().range.hi + 1);
    out[py::str(name)] = py::make_tuple(py::tuple(shape), dtype_name(g.type(in).dtype));
  }
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
      .def_property_readonly(
          "sequence_range",
          [](const Network& n) -> py::object {
            const runtime::RangedArtifact* r = n.ranged_artifact();
            if (!r) return py::none();
            return py::module_::import("builtins")
                .attr("range")(r->plan().range.lo, r->plan().range.hi + 1);
          },
          "the sequence lengths run() takes (compiled with a range in input_shapes), else None")
      .def_property_readonly(
          "buckets",
          [](const Network& n) {
            const runtime::RangedArtifact* r = n.ranged_artifact();
            return r ? r->buckets() : std::vector<int64_t>{};
          },
          "a ranged network's bucket lengths (each length runs in the first at or above it)")
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
        py::arg("sequence_buckets") = "", py::arg("precision") = "fp32",
        "Compiles a model (a zoo name or an ONNX file) as `tensortune compile` does; "
        "input_shapes={'input_ids': (1, range(1, 513))} compiles for every sequence length "
        "1..512 (buckets at powers of two and 1.5x each, or sequence_buckets='octaves' or "
        "'16,64,512'; each length padded to its bucket and masked exactly; run() takes any). "
        "records= a "
        "record DB or an AutoTVM log (each workload's best config; untuned ones borrow the "
        "nearest tuned one unless borrow=False), or none for default configs; exclude_algorithms: "
        "template algorithms no node runs (e.g. ['winograd']), as --exclude-algorithm; "
        "precision='tf32', 'fp16', 'bf16' or '3xtf32' (a CUDA target of sm_80+): the convolutions, "
        "dense "
        "and batch matmul layers on the tensor cores at that precision, summed in float32, as "
        "--precision.");
  m.def(
      "load",
      [](const py::handle& path, int threads) {
        const std::string p = path_arg(path, "path");
        std::string bytes;
        {
          py::gil_scoped_release release;
          bytes = unwrap(runtime::read_artifact_bytes(p));
        }
        if (runtime::is_ranged_artifact(bytes))
          return Network::ranged(std::move(bytes), p, threads);
        std::shared_ptr<const CompiledNetwork> net;
        {
          py::gil_scoped_release release;
          net = std::make_shared<const CompiledNetwork>(
              unwrap(runtime::deserialize_network(bytes, p)));
        }
        return Network(std::move(net), threads);
      },
      py::arg("path"), py::kw_only(), py::arg("threads") = 0,
      "reads a .tt artifact (Network.save or `tensortune compile`); threads=0: its own count");
}

}  // namespace tensortune::python
