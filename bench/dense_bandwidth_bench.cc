// Dense at batch 1 is a matrix-vector product: every weight is read once and used for one
// multiply-add, so its speed is the memory's, not the FMA units'. This benchmark tunes the
// `dense` template on batch-1 shapes with cold caches (weights and output flushed before every
// timed call, as AutoTVM's enable_cpu_cache_flush) and reports what the kernel reads per second
// against a STREAM-like triad (a[i] = b[i] + s * c[i] over arrays far beyond the last-level
// cache) measured in the same run on the same number of threads.
//
// Bytes per call: the weights, the input vector and the output (K*N + K + N floats); the triad
// counts 3 floats per element, as STREAM does (its write-allocate traffic is not counted).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_stats.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/local_measurer.h"
#include "records/record_store.h"
#include "support/memory_bandwidth.h"
#include "support/thread_pool.h"
#include "tuner/index_tuners.h"
#include "tuner/tuning_loop.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tensortune::bench::median;

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  std::string name;
  int64_t out_features, in_features;
};

std::vector<Shape> parse_shapes(const std::string& text) {
  std::vector<Shape> shapes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto x = item.find('x');
    if (x == std::string::npos) throw CLI::ValidationError("--shapes", "'" + item + "' is not NxK");
    Shape s{item, std::stoll(item.substr(0, x)), std::stoll(item.substr(x + 1))};
    if (s.out_features < 1 || s.in_features < 1)
      throw CLI::ValidationError("--shapes", "'" + item + "' must have positive sizes");
    shapes.push_back(s);
  }
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Dense at batch 1 as bandwidth: the tuned dense kernel's bytes per second with cold caches, "
      "against a STREAM-like triad measured in the same run"};
  // The classifiers of resnet-18/34, mobilenet-v1, resnet-50, VGG's fc7 and fc6, and a
  // transformer's feed-forward pair (N x K: out_features x in_features).
  std::string shapes_text = "1000x512,1000x1024,1000x2048,4096x4096,4096x25088,3072x768,768x3072";
  int64_t trials = 60;
  int threads = 1;
  int repeat = 30;
  int64_t triad_mib = 256;
  uint64_t seed = 0;
  app.add_option("--shapes", shapes_text, "batch-1 dense shapes, out_features x in_features")
      ->capture_default_str();
  app.add_option("--trials", trials, "random-tuner trials per shape (cold caches)")
      ->capture_default_str();
  app.add_option("--threads", threads, "threads for the kernel and the triad")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--repeat", repeat, "timed calls per config, each after a cache flush")
      ->check(CLI::Range(3, 1000))
      ->capture_default_str();
  app.add_option("--triad-mib", triad_mib, "size of each triad array, MiB (>> last-level cache)")
      ->check(CLI::Range(8, 4096))
      ->capture_default_str();
  app.add_option("--seed", seed, "random tuner seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<Shape> shapes;
  try {
    shapes = parse_shapes(shapes_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: --shapes %s: %s\n", shapes_text.c_str(), e.what());
    return 2;
  }

  const std::string db_path = (std::filesystem::temp_directory_path() /
                               ("tt_dense_bw_" + std::to_string(::getpid()) + ".db"))
                                  .string();
  auto store = tt::records::RecordStore::open(db_path);
  if (!store) {
    std::fprintf(stderr, "error: %s\n", store.error().message.c_str());
    return 1;
  }
  const ss::Target target = tt::codegen::host_target();
  std::printf(
      "# dense at batch 1 as bandwidth, %s, %d thread(s); random tuner, %lld trials per shape, "
      "each config timed %d times, every call after a flush of weights and output (number=1)\n",
      target.spec.c_str(), threads, static_cast<long long>(trials), repeat);
  const tt::TriadBandwidth before = tt::measure_triad_bandwidth(threads, triad_mib << 20, 10);
  std::printf("triad before (3 x %lld MiB arrays): best %.2f GB/s, median %.2f GB/s\n",
              static_cast<long long>(triad_mib), before.best_gbs, before.median_gbs);
  std::fflush(stdout);

  struct Row {
    std::string name, config;
    double bytes = 0, seconds = 0, flop = 0;
  };
  std::vector<Row> rows;
  for (const Shape& shape : shapes) {
    ss::DenseWorkload w{1, shape.out_features, shape.in_features};
    Row best;
    // Both x86 dense templates (weights packed N/bn x K x bn, or read as they are), each tuned
    // with cold caches; the faster one's best config measured again.
    for (const char* name : {"dense_pack.x86", "dense_nopack.x86"}) {
      auto task = ss::make_task(name, w, target);
      if (!task) {
        std::fprintf(stderr, "%s %s: %s\n", shape.name.c_str(), name, task.error().message.c_str());
        continue;
      }
      auto space = ss::make_config_space(*task);
      tt::measure::MeasureOptions mo;
      mo.threads = threads;
      mo.flush_cache = true;
      mo.timing.number = 1;
      mo.timing.repeat = repeat;
      mo.timing.min_repeat_ms = 0;  // number stays 1: every timed call starts cold
      auto local = tt::measure::LocalMeasurer::create(*task, mo);
      if (!local) {
        std::fprintf(stderr, "%s %s: %s\n", shape.name.c_str(), name,
                     local.error().message.c_str());
        continue;
      }
      tt::tuner::LocalMeasurerAdapter measurer(std::move(*local));
      tt::tuner::RandomTuner tuner(*space, seed);
      tt::tuner::TuneOptions to;
      to.trials = std::min<int64_t>(trials, space->valid_count());
      to.run_id = std::string("dense-bw-") + name + "-" + shape.name;
      auto result = tt::tuner::tune_task(
          *task, *space, tuner, measurer, store->get(), to, [&](const tt::tuner::TuneProgress& p) {
            std::fprintf(stderr, "\r%-12s %s %lld/%lld  ", shape.name.c_str(), name,
                         static_cast<long long>(p.done), static_cast<long long>(p.total));
          });
      std::fprintf(stderr, "\r%60s\r", "");
      if (!result || !result->best_config) continue;
      // The best config again, three times; its median per-call time (each call cold).
      std::vector<double> seconds;
      for (int round = 0; round < 3; ++round) {
        auto r = measurer.measure(*space, {*result->best_config});
        if (r && (*r)[0].ok())
          for (double c : (*r)[0].costs) seconds.push_back(c);
      }
      if (seconds.empty()) continue;
      const double s = median(seconds);
      if (best.seconds == 0 || s < best.seconds) {
        best.seconds = s;
        best.config = std::string(name) + " " + space->describe(*result->best_config);
      }
    }
    if (best.seconds == 0) {
      std::printf("%-12s tuning failed\n", shape.name.c_str());
      continue;
    }
    best.name = shape.name;
    best.bytes = sizeof(float) * (static_cast<double>(w.out_features) * w.in_features +
                                  w.in_features + w.out_features);
    best.flop = w.flop();
    rows.push_back(best);
  }
  const tt::TriadBandwidth after = tt::measure_triad_bandwidth(threads, triad_mib << 20, 10);
  std::printf("triad after: best %.2f GB/s, median %.2f GB/s\n", after.best_gbs, after.median_gbs);
  // The higher of the two triad medians: the machine's bandwidth drifts by 10-20% within
  // minutes here, and the kernels are not to be flattered by a slow triad.
  const double triad_gbs = std::max(before.median_gbs, after.median_gbs);
  std::printf("%-12s %9s %10s %10s %9s %9s  %s\n", "N x K", "MiB", "median us", "GB/s", "of triad",
              "GFLOPS", "best config (template, knobs)");
  std::vector<double> fractions;
  for (const Row& r : rows) {
    const double gbs = r.bytes / r.seconds / 1e9;
    fractions.push_back(gbs / triad_gbs);
    std::printf("%-12s %9.2f %10.1f %10.2f %8.1f%% %9.2f  %s\n", r.name.c_str(),
                r.bytes / (1 << 20), r.seconds * 1e6, gbs, 100 * gbs / triad_gbs,
                r.flop / r.seconds / 1e9, r.config.c_str());
  }
  if (!fractions.empty())
    std::printf("median over the shapes: %.1f%% of triad (%.2f GB/s; goal >= 90%%)\n",
                100 * median(fractions), triad_gbs);
  std::filesystem::remove(db_path);
  return 0;
}
