// Best-record queries at scale (issue 22): a record DB filled with N synthetic results (the
// shapes of a cluster's archive: many workloads, several device keys and thread counts, one
// in ten failing; a model's conv2d tasks among them) through the record store's own insert path,
// then the queries users and the compiler run, timed. Prints one row per size:
//   results | insert rate | AutoTVM log import rate (DBs up to 200,000 results) | best over
//   all workloads | best for the model's tasks | the compiler's record lookup for the model
//   (TunedConfigs::load and a schedule per conv task) | records check (a full scan)
//
//   build/bench/records_bench [--sizes 100000,1000000] [--workloads 2000] [--model resnet-50]
//                             [--dir /tmp]
// Nothing is kept: each DB is deleted after its row.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

#include "compiler/driver/tuned_configs.h"
#include "compiler/frontend/model_zoo.h"
#include "records/autotvm_log.h"
#include "records/record_store.h"
#include "schedule_space/task.h"
#include "support/log.h"
#include "tuner/task_extraction.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

template <typename Fn>
double median_ms(int runs, Fn fn) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t = std::chrono::steady_clock::now();
    fn();
    ms.push_back(seconds_since(t) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Best-record queries over record DBs of growing size"};
  std::vector<int64_t> sizes = {100000, 1000000};
  int workloads = 2000;
  std::string dir = std::filesystem::temp_directory_path().string();
  app.add_option("--sizes", sizes, "results per DB")->delimiter(',');
  std::string model = "resnet-50";
  app.add_option("--workloads", workloads, "distinct dense workloads");
  app.add_option("--model", model, "zoo model whose tasks join the archive and are looked up");
  app.add_option("--dir", dir, "where the DBs are written (and deleted)");
  CLI11_PARSE(app, argc, argv);
  // The synthetic archive's random configs make the compiler warn per workload; the table is
  // what this prints.
  tt::logger("compiler")->set_level(spdlog::level::err);

  const char* keys[] = {"x86-avx512", "x86-avx2", "cuda-sm80", "cuda-sm90"};
  const ss::Target target{"llvm -keys=cpu", 16};
  auto graph = tt::frontend::zoo_model(model);
  auto extraction = graph ? tt::tuner::extract_tasks(*graph, target)
                          : tt::Expected<tt::tuner::TaskExtraction>(graph.error());
  if (!extraction) {
    std::fprintf(stderr, "%s\n", extraction.error().message.c_str());
    return 1;
  }
  std::printf(
      "| results | insert results/s | AutoTVM log import results/s | best, all workloads ms | "
      "best, %s (%zu tasks) ms | compile lookup, %s ms | records check (full scan) s | DB MiB "
      "|\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      model.c_str(), extraction->tasks.size(), model.c_str());
  for (int64_t size : sizes) {
    const std::string path = dir + "/records_bench_" + std::to_string(size) + ".db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    auto store = tt::records::RecordStore::open(path);
    if (!store) {
      std::fprintf(stderr, "%s\n", store.error().message.c_str());
      return 1;
    }
    std::mt19937_64 rng(size);
    std::vector<ss::Task> tasks;
    std::vector<ss::ConfigSpace> spaces;
    std::vector<int64_t> ids;
    for (const auto& t : extraction->tasks) tasks.push_back(t.task);  // the model's, first
    for (int w = 0; w < workloads; ++w) {
      tasks.push_back(*ss::make_task(ss::kDensePack,
                                     ss::DenseWorkload{1 + w % 4, 64 + 16 * (w / 4), 256}, target));
    }
    for (const ss::Task& t : tasks) {
      spaces.push_back(*ss::make_config_space(t));
      ids.push_back(*(*store)->ensure_task(tt::records::task_info(t, spaces.back())));
    }
    // Batches of 64 results of one task, as tuning runs and imports write them.
    const auto start = std::chrono::steady_clock::now();
    for (int64_t written = 0; written < size; written += 64) {
      const size_t w = rng() % tasks.size();
      std::vector<ss::Config> configs;
      std::vector<ss::MeasureResult> results;
      for (int i = 0; i < 64 && written + i < size; ++i) {
        const int64_t index = static_cast<int64_t>(rng() % static_cast<uint64_t>(spaces[w].size()));
        configs.push_back(*spaces[w].config_at(index));
        ss::MeasureResult r;
        r.config_index = index;
        r.device_key = keys[rng() % 4];
        r.threads = 1 + static_cast<int>(rng() % 2);
        r.costs = {1e-5 * double(1 + rng() % 1000)};
        if (rng() % 10 == 0) {
          r.error_no = ss::MeasureErrorNo::kRunTimeout;
          r.costs = {ss::kErrorCost};
        }
        results.push_back(r);
      }
      if (auto s = (*store)->add_results(ids[w], spaces[w], configs, results, {"bench", "b"}, {});
          !s) {
        std::fprintf(stderr, "%s\n", s.error().message.c_str());
        return 1;
      }
    }
    const double insert_rate = double(size) / seconds_since(start);
    const double all_ms = median_ms(5, [&] { (void)(*store)->best_all(); });
    // What `records best --model` runs: the model's workload keys in one query.
    tt::records::RecordStore::BestQuery model_query;
    model_query.device_key = "x86-avx512";
    for (const auto& t : extraction->tasks)
      model_query.workload_keys.push_back(ss::workload_key(t.task));
    const double model_ms = median_ms(5, [&] { (void)(*store)->query_best(model_query); });
    // What `compile --records` does before code generation: load the DB's best and candidates,
    // then a schedule and the block-pair candidates of each of the model's conv2d tasks.
    const double compile_ms = median_ms(3, [&] {
      auto tuned = tt::driver::TunedConfigs::load(path, "x86-avx512", 16, false);
      if (!tuned) return;
      for (const auto& t : extraction->tasks)
        if (const auto* conv = std::get_if<ss::Conv2dWorkload>(&t.task.workload)) {
          (void)tuned->conv2d_schedule(*conv, target);
          (void)tuned->candidates(*conv, target);
        }
    });
    // AutoTVM log import (records import): this DB's records as a log, into a fresh DB.
    double import_rate = 0;
    if (size <= 200000) {
      std::stringstream log;
      (void)tt::records::export_autotvm_log(**store, log);
      const std::string target = path + ".import.db";
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(target + suffix);
      auto into = tt::records::RecordStore::open(target);
      tt::records::ImportOptions options;
      options.device_key = "x86-avx512";
      const auto t = std::chrono::steady_clock::now();
      auto imported = tt::records::import_autotvm_log(**into, log, "bench", options);
      if (imported)
        import_rate = double(imported->imported) / seconds_since(t);
      else
        std::fprintf(stderr, "import: %s\n", imported.error().message.c_str());
      into->reset();
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(target + suffix);
    }
    const auto check_start = std::chrono::steady_clock::now();
    auto check = (*store)->check_best_tables();
    const double check_s = seconds_since(check_start);
    auto stats = (*store)->stats();
    std::printf("| %lld | %.0f | %s | %.1f | %.2f | %.1f | %.1f%s | %.0f |\n",
                static_cast<long long>(size), insert_rate,
                import_rate > 0 ? std::to_string(static_cast<int64_t>(import_rate)).c_str() : "-",
                all_ms, model_ms, compile_ms, check_s,
                check && check->mismatches == 0 ? "" : " (MISMATCH)",
                stats ? double(stats->bytes) / (1 << 20) : 0.0);
    std::fflush(stdout);
    store->reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
  return 0;
}
