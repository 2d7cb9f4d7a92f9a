// Best-record queries at scale: a record DB filled with N synthetic results (the
// shapes of a cluster's archive: many workloads, several device keys and thread counts, one
// in ten failing; a model's conv2d tasks among them) through the record store's own insert path,
// then the queries users and the compiler run, timed. Prints one row per size:
//   results | insert rate | AutoTVM log import rate (DBs up to 200,000 results) | best over
//   all workloads | best for the model's tasks | the compiler's record lookup for the model
//   (TunedConfigs::load and a schedule per conv task) | records check (a full scan) |
//   whole processes of the tensortune binary: `records best` on the DB (the first open, which
//   checks the file, and the median of the next five, which find it unchanged) and
//   `records import` of the DB's AutoTVM log into a fresh DB (DBs up to 200,000 results)
//
//   build/bench/records_bench [--sizes 100000,1000000] [--workloads 2000] [--model resnet-50]
//                             [--dir /tmp] [--keep] [--concurrency-seconds 60]
//                             [--tensortune build/cli/tensortune]
// Each DB is deleted after its row unless --keep; a kept DB of the same size is reused (its
// insert rate then shows as "-"). --concurrency-seconds S adds a second table per size: 8
// reader threads (best for the model, best over all workloads) while a writer inserts batches
// of 64 through the tracker's path, for S seconds: queries done, their latency, and any
// SQLITE_BUSY (goal: none).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "compiler/driver/kernel_choice.h"
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

// One whole process of `command` (its output discarded), in seconds; negative when it failed.
std::string fmt_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", ms);
  return buf;
}

double process_seconds(const std::string& command) {
  const auto t = std::chrono::steady_clock::now();
  const int rc = std::system((command + " >/dev/null 2>&1").c_str());
  const double s = seconds_since(t);
  return rc == 0 ? s : -1;
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

// 8 readers (each its own connection, as clients of a shared archive) and one writer for
// `seconds`: every query's latency, and any error (SQLITE_BUSY would surface as one).
void concurrency(const std::string& path, const tt::records::RecordStore::BestQuery& model_query,
                 const ss::Task& task, const ss::ConfigSpace& space, int64_t task_id,
                 double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> errors{0};
  std::mutex mu;
  std::vector<double> model_ms, all_ms;
  std::string first_error;
  std::vector<std::thread> readers;
  for (int t = 0; t < 8; ++t)
    readers.emplace_back([&, t] {
      auto store = tt::records::RecordStore::open(path);
      if (!store) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.empty()) first_error = "open: " + store.error().message;
        return void(++errors);
      }
      std::vector<double> mine_model, mine_all;
      while (!stop) {
        const auto q = std::chrono::steady_clock::now();
        const bool all = t % 4 == 3;  // one reader in four asks for everything
        auto r = all ? (*store)->best_all() : (*store)->query_best(model_query);
        (all ? mine_all : mine_model).push_back(seconds_since(q) * 1e3);
        if (!r) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.empty()) first_error = r.error().message;
          ++errors;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      model_ms.insert(model_ms.end(), mine_model.begin(), mine_model.end());
      all_ms.insert(all_ms.end(), mine_all.begin(), mine_all.end());
    });
  int64_t written = 0, write_errors = 0;
  {
    auto writer = tt::records::RecordStore::open(path);
    std::mt19937_64 rng(7);
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(seconds));
    while (writer && std::chrono::steady_clock::now() < end) {
      std::vector<ss::Config> configs;
      std::vector<ss::MeasureResult> results;
      for (int i = 0; i < 64; ++i) {
        const int64_t index = static_cast<int64_t>(rng() % static_cast<uint64_t>(space.size()));
        configs.push_back(*space.config_at(index));
        ss::MeasureResult r;
        r.config_index = index;
        r.device_key = "x86-avx512";
        r.costs = {1e-5 * double(1 + rng() % 1000)};
        results.push_back(r);
      }
      if ((*writer)->add_results(task_id, space, configs, results, {"bench", "w"}, {}))
        written += 64;
      else
        ++write_errors;
    }
  }
  stop = true;
  for (auto& r : readers) r.join();
  auto pct = [](std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1)))];
  };
  std::printf(
      "\n8 readers and a writer for %.0f s on %s: %lld results written (%lld write "
      "errors), %zu model queries (p50 %.2f ms, p99 %.2f ms, max %.1f ms), %zu all-workload "
      "queries (p50 %.1f ms, max %.1f ms), %lld reader errors%s%s\n\n",
      seconds, task.template_name.c_str(), static_cast<long long>(written),
      static_cast<long long>(write_errors), model_ms.size(), pct(model_ms, 0.5),
      pct(model_ms, 0.99), pct(model_ms, 1), all_ms.size(), pct(all_ms, 0.5), pct(all_ms, 1),
      static_cast<long long>(errors.load()), first_error.empty() ? "" : ": ", first_error.c_str());
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
  bool keep = false;
  app.add_flag("--keep", keep, "keep each DB (and reuse one of the same size next time)");
  double concurrency_s = 0;
  app.add_option("--concurrency-seconds", concurrency_s,
                 "then 8 readers and a writer on the DB for this long");
  std::string binary =
      (std::filesystem::path(argv[0]).parent_path() / ".." / "cli" / "tensortune").string();
  app.add_option("--tensortune", binary, "the binary whose whole processes are timed");
  CLI11_PARSE(app, argc, argv);
  const bool processes = std::filesystem::exists(binary);
  if (!processes)
    std::fprintf(stderr, "no %s: the whole-process columns are left out (--tensortune)\n",
                 binary.c_str());
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
      "| `records best` process, first / later ms | `records import` process results/s "
      "|\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      model.c_str(), extraction->tasks.size(), model.c_str());
  for (int64_t size : sizes) {
    const std::string path = dir + "/records_bench_" + std::to_string(size) + ".db";
    const bool reuse = keep && std::filesystem::exists(path);
    if (!reuse)
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
    for (int64_t written = 0; !reuse && written < size; written += 64) {
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
    const double insert_rate = reuse ? 0 : double(size) / seconds_since(start);
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
      tt::driver::KernelChooser chooser(*tuned, target, {});
      for (const auto& t : extraction->tasks)
        if (std::holds_alternative<ss::Conv2dWorkload>(t.task.workload)) {
          (void)chooser.for_workload(t.task.workload, true);
          (void)tuned->candidates_by_blocks(t.task.workload,
                                            ss::templates_for(t.task.workload, "llvm"), target);
        }
    });
    // AutoTVM log import (records import): this DB's records as a log, into a fresh DB.
    double import_rate = 0, process_import_rate = 0;
    if (size <= 200000) {
      std::stringstream log;
      (void)tt::records::export_autotvm_log(**store, log);
      if (processes) {
        const std::string log_path = path + ".log", target = path + ".process.db";
        std::ofstream(log_path) << log.str();
        for (const char* suffix : {"", "-wal", "-shm", "-checked"})
          std::filesystem::remove(target + suffix);
        const double s = process_seconds(binary + " records import --db " + target +
                                         " --device-key x86-avx512 " + log_path);
        if (auto imported = tt::records::RecordStore::open(target); imported && s > 0)
          if (auto count = (*imported)->result_count()) process_import_rate = double(*count) / s;
        for (const char* suffix : {"", "-wal", "-shm", "-checked"})
          std::filesystem::remove(target + suffix);
        std::filesystem::remove(log_path);
      }
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
    // `records best` as users run it: a process that opens the DB (a new file is checked once,
    // an unchanged one trusts the verdict kept beside it) and prints every workload's best.
    std::string best_ms = "-";
    if (processes) {
      std::filesystem::remove(tt::records::RecordStore::verdict_path(path));
      const std::string command = binary + " records best --db " + path;
      const double first = process_seconds(command);
      const double later = median_ms(5, [&] { (void)process_seconds(command); });
      best_ms = first > 0 ? fmt_ms(first * 1e3) + " / " + fmt_ms(later) : "failed";
    }
    std::printf(
        "| %lld | %s | %s | %.1f | %.2f | %.1f | %.1f%s | %.0f | %s | %s |\n",
        static_cast<long long>(size),
        insert_rate > 0 ? std::to_string(static_cast<int64_t>(insert_rate)).c_str() : "-",
        import_rate > 0 ? std::to_string(static_cast<int64_t>(import_rate)).c_str() : "-", all_ms,
        model_ms, compile_ms, check_s, check && check->mismatches == 0 ? "" : " (MISMATCH)",
        stats ? double(stats->bytes) / (1 << 20) : 0.0, best_ms.c_str(),
        process_import_rate > 0 ? std::to_string(static_cast<int64_t>(process_import_rate)).c_str()
                                : "-");
    std::fflush(stdout);
    if (concurrency_s > 0)
      concurrency(path, model_query, tasks[tasks.size() - 1], spaces.back(), ids.back(),
                  concurrency_s);
    store->reset();
    if (!keep)
      for (const char* suffix : {"", "-wal", "-shm", "-checked"})
        std::filesystem::remove(path + suffix);
  }
  return 0;
}
