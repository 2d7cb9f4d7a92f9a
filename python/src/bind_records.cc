// tensortune.RecordStore (the SQLite record DB: best-record queries with `records best`'s
// filters, every result, stats, AutoTVM log import and export) and the module-level
// import_autotvm_log / export_autotvm_log. Records come back as plain dicts.
#include <pybind11/stl.h>

#include <fstream>
#include <memory>

#include "python/src/model_source.h"
#include "python/src/objects.h"
#include "records/autotvm_log.h"
#include "records/record_store.h"
#include "schedule_space/measure.h"
#include "workflow/best_query.h"

namespace tensortune::python {

namespace {

py::object entity_of(const std::string& json_text) {
  // AutoTVM's [[knob, kind, value], ...] -> {knob: value}; a damaged entity stays text.
  try {
    py::object parsed = py::module_::import("json").attr("loads")(json_text);
    py::dict out;
    for (auto item : parsed) {
      auto seq = py::reinterpret_borrow<py::sequence>(item);
      out[seq[0]] = seq[2];
    }
    return out;
  } catch (const py::error_already_set&) {
    return py::str(json_text);
  }
}

py::dict record_dict(const records::StoredRecord& r) {
  py::dict d;
  d["workload_key"] = r.task.workload_key;
  d["template"] = r.task.template_name;
  d["target"] = r.task.target;
  d["flop"] = r.task.flop;
  d["config_index"] = r.config_index;
  d["entity"] = entity_of(r.entity_json);
  d["device_key"] = r.result.device_key;
  d["costs"] = r.result.costs;
  d["mean_cost"] = r.result.ok() ? r.result.mean_cost() : schedule_space::kErrorCost;
  d["gflops"] =
      r.result.ok() && r.result.mean_cost() > 0 ? r.task.flop / r.result.mean_cost() / 1e9 : 0.0;
  d["error_no"] = static_cast<int>(r.result.error_no);
  d["error_msg"] = r.result.error_msg;
  d["timestamp"] = r.result.timestamp;
  d["threads"] = r.result.threads;
  d["tuner"] = r.tuner;
  d["run_id"] = r.run_id;
  d["client"] = r.client;
  d["device"] = r.device;
  return d;
}

std::string time_text(const py::handle& v, const char* name) {
  if (v.is_none()) return "";
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v))
    return py::str(v).cast<std::string>();
  if (py::hasattr(v, "timestamp"))  // datetime
    return py::str(v.attr("timestamp")()).cast<std::string>();
  raise(invalid_argument(std::string(name) + ": " + py::repr(v).cast<std::string>() +
                         " is not a date (\"2026-11-20\"), unix seconds or a datetime"));
}

// One open DB; closed explicitly, by `with`, or when collected.
class PyRecordStore {
 public:
  explicit PyRecordStore(const py::handle& path) : path_(path_arg(path, "path")) {
    py::gil_scoped_release release;
    store_ = unwrap(records::RecordStore::open(path_));
  }

  records::RecordStore& store() {
    if (!store_)
      raise(Error{ErrorCode::kFailedPrecondition, "record store " + path_ + " is closed"});
    return *store_;
  }
  void close() { store_.reset(); }
  const std::string& path() const { return path_; }

  py::list best(const py::object& workload, const py::object& model, const py::object& input_shapes,
                const std::string& template_name, const std::string& device_key, int threads,
                const py::object& since, const py::object& until, int top_k,
                const std::vector<std::string>& exclude_devices) {
    workflow::BestFilters f;
    if (!workload.is_none()) f.workload = workload.cast<std::string>();
    if (!model.is_none()) f.model = model_options(model, input_shapes);
    f.template_filter = template_name;
    f.device_key = device_key;
    f.threads = threads;
    f.since = time_text(since, "since");
    f.until = time_text(until, "until");
    f.top_k = top_k;
    f.exclude_devices = exclude_devices;
    records::RecordStore& s = store();
    std::vector<records::BestRecord> found;
    {
      py::gil_scoped_release release;
      auto query = unwrap(workflow::best_query(f));
      found = unwrap(s.query_best(query));
    }
    py::list out;
    for (const auto& b : found) {
      py::dict d = record_dict(b.record);
      d["gflops"] = b.gflops;
      d["measured"] = b.measured;
      out.append(d);
    }
    return out;
  }

  py::list results() {
    records::RecordStore& s = store();
    std::vector<records::StoredRecord> all;
    {
      py::gil_scoped_release release;
      all = unwrap(s.all_records());
    }
    py::list out;
    for (const auto& r : all) out.append(record_dict(r));
    return out;
  }

  py::dict stats() {
    records::RecordStore& s = store();
    records::RecordStore::Stats st;
    {
      py::gil_scoped_release release;
      st = unwrap(s.stats());
    }
    return py::dict(
        py::arg("results") = st.results, py::arg("failed") = st.failed, py::arg("tasks") = st.tasks,
        py::arg("configs") = st.configs, py::arg("device_keys") = st.device_keys,
        py::arg("templates") = st.templates, py::arg("oldest") = st.oldest,
        py::arg("newest") = st.newest, py::arg("transforms") = st.transforms,
        py::arg("graph_best_models") = st.graph_best_models, py::arg("bytes") = st.bytes);
  }

 private:
  std::string path_;
  std::unique_ptr<records::RecordStore> store_;
};

py::dict import_log(records::RecordStore& store, const std::string& log,
                    const std::string& device_key, bool skip_unsupported) {
  std::ifstream in(log);
  if (!in) raise(not_found("cannot read AutoTVM log " + log));
  records::ImportOptions options;
  options.device_key = device_key;
  options.skip_unsupported = skip_unsupported;
  records::ImportStats stats;
  {
    py::gil_scoped_release release;
    stats = unwrap(records::import_autotvm_log(store, in, log, options));
  }
  py::dict skipped;
  for (const auto& [name, s] : stats.skipped)
    skipped[py::str(name)] = py::dict(py::arg("count") = s.count, py::arg("reason") = s.reason);
  return py::dict(py::arg("lines") = stats.lines, py::arg("imported") = stats.imported,
                  py::arg("skipped") = skipped,
                  py::arg("device_keys") =
                      std::vector<std::string>(stats.device_keys.begin(), stats.device_keys.end()));
}

int64_t export_log(records::RecordStore& store, const std::string& log) {
  py::gil_scoped_release release;
  std::ofstream out(log);
  if (!out) raise(not_found("cannot write " + log));
  const int64_t lines = unwrap(records::export_autotvm_log(store, out));
  out.close();
  if (!out) raise(unavailable("writing " + log + " failed"));
  return lines;
}

}  // namespace

void bind_records(py::module_& m) {
  py::class_<PyRecordStore>(m, "RecordStore",
                            "A tensortune record DB (SQLite; created when missing). Use it in a "
                            "`with` block or close() it; a closed store raises tensortune.Error.")
      .def(py::init<const py::handle&>(), py::arg("path"))
      .def_property_readonly("path", &PyRecordStore::path)
      .def(
          "best", &PyRecordStore::best, py::kw_only(), py::arg("workload") = py::none(),
          py::arg("model") = py::none(), py::arg("input_shapes") = py::none(),
          py::arg("template") = "", py::arg("device_key") = "", py::arg("threads") = 0,
          py::arg("since") = py::none(), py::arg("until") = py::none(), py::arg("top_k") = 1,
          py::arg("exclude_devices") = std::vector<std::string>{},
          "The fastest error-free records per (workload, target, device key), as `records best` "
          "gives them: workload= an exact key or a shape ('1x64x56x56'), model= a zoo name or ONNX "
          "file (its tasks only), template=, device_key=, threads=, since=/until= (a date, unix "
          "seconds or a datetime), top_k= per group. A list of dicts (empty when nothing "
          "matches).")
      .def("results", &PyRecordStore::results, "every stored result, oldest first, as dicts")
      .def("__iter__", [](PyRecordStore& s) { return py::iter(s.results()); })
      .def("__len__", [](PyRecordStore& s) { return unwrap(s.store().result_count()); })
      .def("stats", &PyRecordStore::stats,
           "results, failed, tasks, configs, device_keys, templates, oldest, newest, transforms, "
           "graph_best_models, bytes")
      .def(
          "check",
          [](PyRecordStore& s) {
            auto c = unwrap(s.store().check_best_tables());
            return py::dict(py::arg("results") = c.results, py::arg("groups") = c.groups,
                            py::arg("mismatches") = c.mismatches, py::arg("examples") = c.examples);
          },
          "the best-record tables against a full scan (`records check`)")
      .def(
          "import_autotvm_log",
          [](PyRecordStore& s, const py::handle& log, const std::string& device_key,
             bool skip_unsupported) {
            return import_log(s.store(), path_arg(log, "log"), device_key, skip_unsupported);
          },
          py::arg("log"), py::kw_only(), py::arg("device_key") = "",
          py::arg("skip_unsupported") = false,
          "adds an AutoTVM JSON-lines log, all or nothing; returns lines, imported, skipped, "
          "device_keys")
      .def(
          "export_autotvm_log",
          [](PyRecordStore& s, const py::handle& log) {
            return export_log(s.store(), path_arg(log, "log"));
          },
          py::arg("log"), "writes every record as an AutoTVM log line; returns the line count")
      .def("close", &PyRecordStore::close)
      .def("__enter__", [](PyRecordStore& s) -> PyRecordStore& { return s; })
      .def("__exit__", [](PyRecordStore& s, const py::args&) { s.close(); })
      .def("__repr__", [](const PyRecordStore& s) { return "RecordStore('" + s.path() + "')"; });

  m.def(
      "import_autotvm_log",
      [](const py::handle& db, const py::handle& log, const std::string& device_key,
         bool skip_unsupported) {
        PyRecordStore store(db);
        return import_log(store.store(), path_arg(log, "log"), device_key, skip_unsupported);
      },
      py::arg("db"), py::arg("log"), py::kw_only(), py::arg("device_key") = "",
      py::arg("skip_unsupported") = false, "`tensortune records import --db DB LOG`");
  m.def(
      "export_autotvm_log",
      [](const py::handle& db, const py::handle& log) {
        PyRecordStore store(db);
        return export_log(store.store(), path_arg(log, "log"));
      },
      py::arg("db"), py::arg("log"), "`tensortune records export --db DB > LOG`");
}

}  // namespace tensortune::python
