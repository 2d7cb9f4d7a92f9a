// `tensortune demo`: what scripts/demo.sh runs.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/option_groups.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/driver/compile.h"
#include "compiler/frontend/model_zoo.h"
#include "compiler/runtime/benchmark.h"
#include "device_server/device_server.h"
#include "records/record_store.h"
#include "support/log.h"
#include "support/npy.h"
#include "tracker/tracker_client.h"
#include "tracker/tracker_server.h"
#include "tuner/resnet18_workloads.h"
#include "workflow/tuning_session.h"

namespace tensortune::cli {

namespace ss = schedule_space;

namespace {

struct DemoFlags {
  std::string db = "tensortune-demo.db";
  std::string archive = "tensortune-demo-archive.db";
  workflow::TuningOptions tuning;
};

// The embedded default: a tracker and a device server in this process, on loopback, so the
// demo measures the way a farm does (worker processes, leases, the archive).
struct EmbeddedFarm {
  std::unique_ptr<tracker::TrackerServer> tracker;
  std::atomic<bool> stop{false};
  std::thread device;
  std::mutex mu;
  std::optional<Error> device_error;  ///< why the device server stopped, if it did
  ~EmbeddedFarm() {
    stop = true;
    if (device.joinable()) device.join();
    if (tracker) tracker->shutdown();
  }
};

Expected<std::unique_ptr<EmbeddedFarm>> start_embedded_farm(const DemoFlags& f,
                                                            const std::string& key) {
  auto farm = std::make_unique<EmbeddedFarm>();
  // The farm's per-job lines are for operators of a real tracker; the demo prints its own.
  for (const char* name : {"tracker", "device"})
    if (logger(name)->level() == spdlog::level::info) logger(name)->set_level(spdlog::level::warn);
  tracker::TrackerOptions to;
  to.host = "127.0.0.1";
  to.port = 0;
  to.db_path = f.archive;
  TT_ASSIGN_OR_RETURN(farm->tracker, tracker::TrackerServer::start(to));
  device_server::DeviceServerOptions d;
  d.tracker.address = "127.0.0.1:" + std::to_string(farm->tracker->port());
  d.device_key = key;
  d.name = "embedded";
  EmbeddedFarm* raw = farm.get();
  farm->device = std::thread([d, raw] {
    Status s = device_server::run_device_server(d, raw->stop);
    if (!s) {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->device_error = s.error().with_context("the embedded device server stopped");
    }
  });
  // The device registers within a moment, or has failed (it could not start its worker, say):
  // tell now, not after the tracker's minute of waiting for a device of the key.
  wire::TrackerEndpoint endpoint;
  endpoint.address = d.tracker.address;
  TT_ASSIGN_OR_RETURN(auto client, tracker::TrackerClient::connect(endpoint));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(farm->mu);
      if (farm->device_error) return *farm->device_error;
    }
    if (auto status = client->status(); status && status->devices_size() > 0) return farm;
    if (std::chrono::steady_clock::now() > deadline)
      return unavailable(
          "the embedded device server did not register with the embedded tracker "
          "in 30 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// The back half: resnet-18 compiled with and without the records just made, timed end to end.
Status compile_and_time_resnet18(const std::string& db) {
  TT_ASSIGN_OR_RETURN(graph::Graph model, frontend::zoo_model("resnet-18"));
  std::printf(
      "\nCompiling resnet-18 (opt level 3) with default configs and with the records in %s, "
      "then timing each (1 thread, median of 5 rounds):\n",
      db.c_str());
  auto log = logger("compiler");
  const auto level = log->level();
  log->set_level(spdlog::level::err);  // the default-config warnings are the point here, not news
  double ms[2] = {0, 0};
  int tuned = 0, borrowed = 0, total = 0;
  for (int with_records = 0; with_records < 2; ++with_records) {
    driver::CompileOptions options;
    if (with_records) options.records = db;
    auto net = driver::compile_network(model, options);
    if (!net) {
      log->set_level(level);
      return net.error();
    }
    if (with_records)
      for (const auto& s : net->schedules)
        tuned += s.tuned, borrowed += !s.borrowed_from.empty(), ++total;
    TT_ASSIGN_OR_RETURN(
        auto exe,
        runtime::Executable::load(std::make_shared<runtime::CompiledNetwork>(std::move(*net)), 1));
    Tensor x = Tensor::zeros({1, 3, 224, 224});
    fill_uniform(x, 0);
    TT_RETURN_IF_ERROR(exe->set_input("data", std::move(x)));
    runtime::BenchOptions bench;
    bench.repeat = 5;
    TT_ASSIGN_OR_RETURN(auto r, runtime::benchmark(*exe, bench));
    ms[with_records] = r.median_ms;
  }
  log->set_level(level);
  std::printf(
      "  default configs: %.2f ms; with the demo's records (%d of %d conv2d and dense workloads "
      "tuned, %d "
      "borrowing "
      "a tuned one's config): %.2f ms (%.2fx)\n",
      ms[0], tuned, total, borrowed, ms[1], ms[0] / ms[1]);
  std::printf(
      "  The same from the command line: tensortune compile --model resnet-18 --records %s -o "
      "r18.tt; "
      "tensortune bench r18.tt --profile\n",
      db.c_str());
  return ok_status();
}

Status run_demo(DemoFlags f) {
  const ss::Target target = codegen::host_target();
  std::unique_ptr<EmbeddedFarm> farm;
  if (f.tuning.tracker.empty()) {
    f.tuning.farm_key =
        f.tuning.device_key.empty() ? codegen::host_device_key() : f.tuning.device_key;
    TT_ASSIGN_OR_RETURN(farm, start_embedded_farm(f, f.tuning.farm_key));
    f.tuning.tracker = "127.0.0.1:" + std::to_string(farm->tracker->port());
    std::printf(
        "embedded farm: tracker on %s (archive %s), one device server '%s' with a worker process\n",
        f.tuning.tracker.c_str(), f.archive.c_str(), f.tuning.farm_key.c_str());
  }
  // A handful of ResNet-18 layers: one per stage, a strided 1x1, and the classifier.
  const std::vector<std::string> picks = {"conv 3x3 64->64 @56",   "conv 1x1/2 64->128 @56",
                                          "conv 3x3 128->128 @28", "conv 3x3 256->256 @14",
                                          "conv 3x3 512->512 @7",  "dense 1x512 -> 1000"};
  std::vector<tuner::NamedTask> layers;
  for (const auto& t : tuner::resnet18_workloads())
    if (std::find(picks.begin(), picks.end(), t.name) != picks.end()) layers.push_back(t);
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  std::printf(
      "tensortune demo: tuning %zu ResNet-18 layers on this machine (%s, %s), %s tuner, %lld "
      "trials each, "
      "records in %s\n\n",
      layers.size(), target.spec.c_str(), codegen::host_device_key().c_str(),
      f.tuning.tuner.c_str(), static_cast<long long>(f.tuning.trials), f.db.c_str());
  struct Row {
    std::string name;
    double best, fallback;
    int64_t trials;
  };
  std::vector<Row> rows;
  int number = 1;
  for (const tuner::NamedTask& l : layers) {
    TT_ASSIGN_OR_RETURN(ss::Task task, ss::make_task(l.template_name, l.workload, target));
    TT_ASSIGN_OR_RETURN(auto summary, workflow::tune_one_task(task, f.tuning, store.get(), number++,
                                                              static_cast<int>(layers.size())));
    rows.push_back({l.name, summary.result.progress.best_gflops, summary.default_gflops,
                    summary.result.progress.done});
  }
  std::printf("\n%-26s %12s %15s %8s %8s\n", "layer", "best GFLOPS", "default GFLOPS", "speedup",
              "trials");
  for (const Row& r : rows)
    std::printf("%-26s %12.2f %15.2f %7.2fx %8lld\n", r.name.c_str(), r.best, r.fallback,
                r.fallback > 0 ? r.best / r.fallback : 0.0, static_cast<long long>(r.trials));
  std::printf(
      "(default = the template's untuned fallback config, AutoTVM's rule or near it; single-thread "
      "GFLOPS)\n");
  TT_RETURN_IF_ERROR(compile_and_time_resnet18(f.db));
  std::printf(
      "\nNext: `tensortune records best --db %s` lists the best configs; rerun with a larger "
      "--trials to "
      "continue tuning from where this run stopped.\n",
      f.db.c_str());
  return ok_status();
}

}  // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<DemoFlags>();
  flags->tuning.trials = 24;
  flags->tuning.tuner = "xgb";  // the fewest trials to a good config; 24 random trials often miss
  flags->tuning.min_repeat_ms = 50;
  flags->tuning.measure_default = true;
  CLI::App* cmd = app.add_subcommand("demo",
                                     "Tune a few ResNet-18 layers and a dense layer through an "
                                     "embedded tracker and device server and print a table");
  cmd->add_option("--db", flags->db, "SQLite record DB in the working folder")
      ->capture_default_str();
  cmd->add_option("--archive", flags->archive, "the embedded tracker's archive (without --tracker)")
      ->capture_default_str();
  add_tuning_flags(*cmd, flags->tuning);
  cmd->callback([flags, &exit_code] {
    Status st = run_demo(*flags);
    exit_code = st.has_value() ? 0 : report_error(st.error());
  });
}

}  // namespace tensortune::cli
