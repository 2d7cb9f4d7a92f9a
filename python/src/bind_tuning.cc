// tensortune.tune_op: one task through the CLI's tuning session (same measurer, tuner, resume
// and records), quiet, reporting each batch to Python callbacks instead. The GIL is released
// while configs are built, measured and learned from, and taken back once per batch for the
// callbacks and to see a Ctrl-C; either stops the loop after that batch, with everything
// measured so far recorded, and the exception is raised once the session is closed.
#include <pybind11/stl.h>

#include <cstdio>
#include <optional>

#include "python/src/model_source.h"
#include "python/src/objects.h"
#include "tuner/tuner_factory.h"
#include "tuner/tuning_loop.h"
#include "workflow/graph_tune.h"
#include "workflow/imposed_blocks.h"
#include "workflow/tuning_session.h"

namespace tensortune::python {

namespace ss = schedule_space;

namespace {

py::dict progress_dict(const tuner::TuneProgress& p) {
  return py::dict(py::arg("done") = p.done, py::arg("total") = p.total,
                  py::arg("current_gflops") = p.current_gflops,
                  py::arg("best_gflops") = p.best_gflops, py::arg("elapsed_s") = p.elapsed_s,
                  py::arg("errors") = p.errors);
}

py::list results_list(const ss::Task& task, const std::shared_ptr<const ss::ConfigSpace>& space,
                      const std::vector<ss::Config>& configs,
                      const std::vector<ss::MeasureResult>& results) {
  py::list out;
  for (size_t i = 0; i < configs.size(); ++i) {
    const ss::MeasureResult& r = results[i];
    out.append(py::dict(py::arg("config") = PyConfig{space, configs[i]},
                        py::arg("gflops") = tuner::result_gflops(task, r),
                        py::arg("costs") = r.costs,
                        py::arg("error_no") = static_cast<int>(r.error_no),
                        py::arg("error_msg") = r.error_msg, py::arg("threads") = r.threads));
  }
  return out;
}

// The tracker connection arguments shared by tune_op and graph_tune, onto their flags (both
// flag structs name these fields alike).
template <typename Flags>
void set_tracker_flags(Flags& f, const py::object& tracker, const py::object& token_file,
                       const py::object& tls_ca, const py::object& tls_cert,
                       const py::object& tls_key) {
  f.tracker = optional_path_arg(tracker, "tracker");
  f.token_file = optional_path_arg(token_file, "token_file");
  f.tls_ca = optional_path_arg(tls_ca, "tls_ca");
  f.tls_cert = optional_path_arg(tls_cert, "tls_cert");
  f.tls_key = optional_path_arg(tls_key, "tls_key");
}

void check_at_least(const char* name, double value, double min) {
  if (value < min) {
    char text[128];
    std::snprintf(text, sizeof text, "%s = %g, must be >= %g", name, value, min);
    raise(invalid_argument(text));
  }
}

py::dict tune_op(const PyTask& task, const std::string& tuner_name, int64_t trials,
                 const py::object& db, int batch_size, int64_t early_stopping, uint64_t seed,
                 int threads, int64_t number, int repeat, double min_repeat_ms, double timeout,
                 bool flush_cache, const py::object& device_key, const py::object& tracker,
                 const py::object& key, const py::object& token_file, const py::object& tls_ca,
                 const py::object& tls_cert, const py::object& tls_key, int priority,
                 const py::object& build_workers, bool remote_build, bool transfer, int plan_size,
                 bool whole_space, const py::object& callbacks) {
  check_at_least("trials", double(trials), 1);
  check_at_least("batch_size", batch_size, 1);
  check_at_least("early_stopping", double(early_stopping), 0);
  check_at_least("threads", threads, 1);
  check_at_least("number", double(number), 1);
  check_at_least("repeat", repeat, 1);
  check_at_least("min_repeat_ms", min_repeat_ms, 0);
  check_at_least("timeout", timeout, 1);
  check_at_least("plan_size", plan_size, 1);
  bool known = false;
  for (const auto& n : tuner::tuner_names()) known = known || n == tuner_name;
  if (!known) {
    std::string names;
    for (const auto& n : tuner::tuner_names()) names += (names.empty() ? "" : ", ") + n;
    raise(invalid_argument("tuner = '" + tuner_name + "' is not one of " + names));
  }
  std::vector<py::object> fns;
  if (!callbacks.is_none()) {
    if (PyCallable_Check(callbacks.ptr())) {
      fns.push_back(callbacks);
    } else {
      for (auto c : callbacks) {
        if (!PyCallable_Check(c.ptr()))
          raise(invalid_argument("callbacks: " + py::repr(c).cast<std::string>() +
                                 " is not callable"));
        fns.push_back(py::reinterpret_borrow<py::object>(c));
      }
    }
  }

  workflow::TuningOptions f;
  f.tuner = tuner_name;
  f.trials = trials;
  f.batch_size = batch_size;
  f.early_stopping = early_stopping;
  f.seed = seed;
  f.threads = threads;
  f.number = number;
  f.repeat = repeat;
  f.min_repeat_ms = min_repeat_ms;
  f.timeout_s = timeout;
  f.flush_cache = flush_cache;
  f.device_key = optional_path_arg(device_key, "device_key");
  set_tracker_flags(f, tracker, token_file, tls_ca, tls_cert, tls_key);
  f.farm_key = optional_path_arg(key, "key");
  f.priority = priority;
  if (!build_workers.is_none()) {
    f.build_workers = build_workers.cast<int>();
    check_at_least("build_workers", f.build_workers, 0);
  }
  f.remote_build = remote_build;
  f.transfer = transfer;
  f.plan_size = plan_size;
  f.whole_space = whole_space;
  const std::string db_path = optional_path_arg(db, "db");

  auto space = task.space();
  std::optional<py::error_already_set> raised;
  workflow::TaskReporting reporting;
  reporting.quiet = true;
  reporting.on_batch = [&](const tuner::TuneProgress& p, const std::vector<ss::Config>& configs,
                           const std::vector<ss::MeasureResult>& results) {
    py::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Ctrl-C
      if (fns.empty()) return true;
      py::dict progress = progress_dict(p);
      py::list batch = results_list(task.task, space, configs, results);
      bool go_on = true;
      for (const auto& fn : fns) {
        py::object r = fn(progress, batch);
        if (!r.is_none() && !r.cast<bool>()) go_on = false;  // False: stop
      }
      return go_on;
    } catch (py::error_already_set& e) {
      raised.emplace(std::move(e));
      return false;
    }
  };

  Expected<workflow::TaskSummary> summary = internal_error("not run");
  {
    py::gil_scoped_release release;
    std::unique_ptr<records::RecordStore> store;
    auto opened = db_path.empty() ? Expected<std::unique_ptr<records::RecordStore>>(nullptr)
                                  : records::RecordStore::open(db_path);
    if (!opened) {
      summary = opened.error();
    } else {
      store = std::move(opened).value();
      summary = workflow::tune_one_task(task.task, f, store.get(), 1, 1, reporting);
    }
  }
  if (raised) throw std::move(*raised);
  const workflow::TaskSummary s = unwrap(std::move(summary));
  const tuner::TuneResult& r = s.result;
  py::object best = py::none();
  if (r.best_config) best = py::cast(PyConfig{space, *r.best_config});
  return py::dict(py::arg("task") = task, py::arg("best_gflops") = r.progress.best_gflops,
                  py::arg("best_config") = best, py::arg("trials") = r.progress.done,
                  py::arg("measured") = r.measured, py::arg("resumed") = r.resumed,
                  py::arg("replayed") = r.replayed, py::arg("errors") = r.progress.errors,
                  py::arg("elapsed_s") = r.progress.elapsed_s, py::arg("stopped") = r.stopped,
                  py::arg("valid_configs") = s.valid_configs,
                  py::arg("offered_configs") = s.offered_configs);
}

void graph_tune(const py::object& model, const py::object& db, const py::object& input_shapes,
                const std::string& device_key, int top_k, int threads, const std::string& solver,
                const py::object& export_log, const py::object& tracker,
                const py::object& token_file, const py::object& tls_ca, const py::object& tls_cert,
                const py::object& tls_key) {
  check_at_least("top_k", top_k, 1);
  check_at_least("threads", threads, 1);
  workflow::GraphTuneOptions f;
  f.model = model_options(model, input_shapes);
  f.db = optional_path_arg(db, "db");
  f.device_key = device_key;
  f.top_k = top_k;
  f.threads = threads;
  f.solver = solver;
  f.export_log = optional_path_arg(export_log, "export_log");
  set_tracker_flags(f, tracker, token_file, tls_ca, tls_cert, tls_key);
  if (solver != "auto" && solver != "dp" && solver != "pbqp")
    raise(invalid_argument("solver = '" + solver + "' is not auto, dp or pbqp"));
  py::gil_scoped_release release;
  unwrap(workflow::graph_tune(f));
}

int64_t tune_imposed_blocks(const py::object& model, const py::object& db,
                            const py::object& input_shapes, int64_t trials, int threads,
                            int64_t number, int repeat, double min_repeat_ms,
                            const py::object& device_key) {
  check_at_least("trials", static_cast<double>(trials), 1);
  check_at_least("threads", threads, 1);
  workflow::ModelOptions flags = model_options(model, input_shapes);
  flags.records = optional_path_arg(db, "db");
  flags.device_key = optional_path_arg(device_key, "device_key");
  workflow::TuningOptions t;
  t.trials = trials;
  t.threads = threads;
  t.number = number;
  t.repeat = repeat;
  t.min_repeat_ms = min_repeat_ms;
  t.device_key = flags.device_key;
  py::gil_scoped_release release;
  return unwrap(workflow::tune_imposed_blocks(flags, t));
}

}  // namespace

void bind_tuning(py::module_& m) {
  m.def("tune_imposed_blocks", &tune_imposed_blocks, py::arg("model"), py::kw_only(), py::arg("db"),
        py::arg("input_shapes") = py::none(), py::arg("trials") = 16, py::arg("threads") = 1,
        py::arg("number") = 10, py::arg("repeat") = 3, py::arg("min_repeat_ms") = 100.0,
        py::arg("device_key") = py::none(),
        "Compiles the model with the records in db and measures up to `trials` configs of each "
        "layer that runs at blocks its neighbours impose (a depthwise conv between int8 "
        "convolutions, say), as `tensortune tune --model` does after the tasks. Returns the "
        "number of configs measured.");
  m.def("graph_tune", &graph_tune, py::arg("model"), py::kw_only(), py::arg("db"),
        py::arg("input_shapes") = py::none(), py::arg("device_key") = "", py::arg("top_k") = 20,
        py::arg("threads") = 1, py::arg("solver") = "auto", py::arg("export_log") = py::none(),
        py::arg("tracker") = py::none(), py::arg("token_file") = py::none(),
        py::arg("tls_ca") = py::none(), py::arg("tls_cert") = py::none(),
        py::arg("tls_key") = py::none(),
        "Chooses every conv node's record among each workload's top_k with the layout "
        "transforms between layers in the cost (AutoTVM's graph tuner; `tensortune "
        "graph-tune`), prints the table, and stores the choice in the DB, where compile() "
        "finds it. export_log= also writes AutoTVM's graph-opt log.");
  m.def("tune_op", &tune_op, py::arg("task"), py::kw_only(), py::arg("tuner") = "xgb",
        py::arg("trials") = 200, py::arg("db") = py::none(), py::arg("batch_size") = 8,
        py::arg("early_stopping") = 0, py::arg("seed") = 0, py::arg("threads") = 1,
        py::arg("number") = 10, py::arg("repeat") = 3, py::arg("min_repeat_ms") = 100.0,
        py::arg("timeout") = 10.0, py::arg("flush_cache") = false,
        py::arg("device_key") = py::none(), py::arg("tracker") = py::none(),
        py::arg("key") = py::none(), py::arg("token_file") = py::none(),
        py::arg("tls_ca") = py::none(), py::arg("tls_cert") = py::none(),
        py::arg("tls_key") = py::none(), py::arg("priority") = 0,
        py::arg("build_workers") = py::none(), py::arg("remote_build") = false,
        py::arg("transfer") = false, py::arg("plan_size") = 64, py::arg("whole_space") = false,
        py::arg("callbacks") = py::none(),
        R"doc(Tunes one task, as `tensortune tune-op` does: measured on this machine, or on a farm
with tracker="HOST:PORT" (and key=, token_file= or tls_*). On a farm the kernels are built
on build_workers threads here (None: all cores for CUDA tasks, none for CPU tasks; 0: the
devices build) or, with remote_build=True, by the farm's builder servers. With db=, every result is
recorded there and a rerun resumes (its earlier trials count). After every batch each callback
is called as callback(progress, results): progress has done, total, current_gflops,
best_gflops, elapsed_s and errors; results has one dict per config (config, gflops, costs,
error_no, error_msg, threads). A callback returning False stops the tuning after that batch;
so does Ctrl-C (KeyboardInterrupt is raised once the batch is recorded). The tuner proposes the
register tiles this CPU suits (docs/cpu_model.md); whole_space=True proposes every valid config.
Returns a dict: best_gflops, best_config, trials, measured, resumed, errors, elapsed_s, stopped,
valid_configs, offered_configs.)doc");
}

}  // namespace tensortune::python
