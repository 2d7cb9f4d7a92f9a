// A model's tunable layers, one row each, against oneDNN on the same shapes and thread count:
// each task the model extracts (its convolutions and dense layers; with --int8 the same layers
// quantized, uint8 x int8 -> int32) is tuned with the chosen tuner, and its best config is timed
// again beside oneDNN, alternating, each side's median kept. Rows give GFLOPS (integer
// operations per second for int8), the ratio ours / oneDNN, and both as a share of this CPU's
// measured peak (an FMA or VNNI loop on the same threads); the last lines weigh the rows by how
// often the model runs each layer: the model's layers in our time against oneDNN's.
//
// With --db the records stay; a second run with the same DB and thread count measures the best
// configs again without tuning (tuning resumes where it stopped).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "bench/bench_stats.h"
#include "bench/onednn_anchor.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/local_measurer.h"
#include "records/record_store.h"
#include "support/fma_peak.h"
#include "tuner/measurer.h"
#include "tuner/task_extraction.h"
#include "tuner/tuner_factory.h"
#include "tuner/tuning_loop.h"
#include "workflow/model_source.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tensortune::bench::median;

namespace {

// The layer as a table names it: its first node, and how many nodes share the workload.
std::string layer_label(const tt::tuner::ExtractedTask& t) {
  std::string label = t.nodes.empty() ? t.workload_key.substr(0, 24) : t.nodes.front();
  if (label.size() > 28) label = label.substr(0, 28);
  if (t.nodes.size() > 1) label += " x" + std::to_string(t.nodes.size());
  return label;
}

// The float task's workload quantized, and the first int8 template that runs it.
std::optional<ss::Task> quantized(const ss::Task& task) {
  ss::Workload w = task.workload;
  bool quantizable = false;
  std::visit(
      [&](auto& x) {
        using W = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<W, ss::Conv2dWorkload> ||
                      std::is_same_v<W, ss::DenseWorkload>) {
          x.precision = ss::Precision::kUInt8Int8;
          quantizable = true;
        }
      },
      w);
  if (!quantizable) return std::nullopt;
  const auto templates = ss::templates_for(w, "llvm");
  if (templates.empty()) return std::nullopt;
  auto q = ss::make_task(std::string(templates.front()->name()), w, task.target);
  if (!q) return std::nullopt;
  return *q;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Per-layer benchmark: a model's tunable layers tuned by tensortune beside oneDNN on the "
      "same shapes and threads, with both as a share of this CPU's measured peak"};
  tt::workflow::ModelOptions model;
  model.model = "resnet-50";
  int threads = 1;
  std::string tuner_name = "xgb";
  int64_t trials = 32;
  uint64_t seed = 0;
  std::string only, db_path;
  int64_t number = 10;
  int repeat = 3, rounds = 3;
  double min_repeat_ms = 100;
  bool int8 = false, no_winograd = false;
  app.add_option("--model", model.model, "a zoo model name or an ONNX file")->capture_default_str();
  app.add_option("--threads", threads, "threads for both sides (and for the peak loop)")
      ->capture_default_str();
  app.add_option("--tuner", tuner_name, "grid, random, ga or xgb")->capture_default_str();
  app.add_option("--trials", trials, "trials per layer (earlier runs' in --db count)")
      ->capture_default_str();
  app.add_option("--seed", seed)->capture_default_str();
  app.add_option("--only", only, "only layers whose first node's name contains this");
  app.add_option("--db", db_path, "keep the records in this DB (default: a temporary file)");
  app.add_option("--number", number)->capture_default_str();
  app.add_option("--repeat", repeat)->capture_default_str();
  app.add_option("--min-repeat-ms", min_repeat_ms)->capture_default_str();
  app.add_option("--rounds", rounds, "alternating re-measurements of ours and oneDNN per layer")
      ->capture_default_str();
  app.add_flag("--int8", int8,
               "the layers quantized (uint8 x int8 -> int32) on the int8 templates, against "
               "oneDNN's int8 convolution and inner product; a quantized model's layers are "
               "int8 without it");
  app.add_flag("--no-winograd", no_winograd, "leave out the Winograd tasks");
  bool flush_cache = false;
  app.add_flag(
      "--flush-cache", flush_cache,
      "time both sides as a network runs a layer: before every round evict the caches "
      "and flush the weights and output (ours: the measurer's flush, as `tune "
      "--flush-cache`; oneDNN's: the same on its buffers). Implies --number 1 "
      "--min-repeat-ms 0 --repeat 10 unless given. Without it both sides run warm, "
      "which flatters large weights (Winograd's transformed ones most). Give it a DB of its "
      "own: a task's best config is the best of all its records");
  CLI11_PARSE(app, argc, argv);
  if (threads < 1) {
    std::fprintf(stderr, "error: --threads must be at least 1, not %d\n", threads);
    return 2;
  }

  if (no_winograd) model.excluded_algorithms.push_back("winograd");
  auto graph = tt::workflow::load_model(model);
  if (!graph) {
    std::fprintf(stderr, "error: %s\n", graph.error().message.c_str());
    return 1;
  }
  auto filter = tt::workflow::algorithm_filter(model);
  if (!filter) {
    std::fprintf(stderr, "error: %s\n", filter.error().message.c_str());
    return 1;
  }
  const ss::Target target = tt::codegen::host_target();
  auto extraction = tt::tuner::extract_tasks(*graph, target, *filter);
  if (!extraction) {
    std::fprintf(stderr, "error: %s\n", extraction.error().message.c_str());
    return 1;
  }
  if (db_path.empty())
    db_path = (std::filesystem::temp_directory_path() /
               ("tt_layer_bench_" + std::to_string(::getpid()) + ".db"))
                  .string();
  auto store = tt::records::RecordStore::open(db_path);
  if (!store) {
    std::fprintf(stderr, "error: %s\n", store.error().message.c_str());
    return 1;
  }

  auto measure_peak = [&] {
    return int8 ? tt::measured_int8_peak(threads) : tt::measured_fma_peak(threads);
  };
  const tt::Peak peak = measure_peak();
  tt::measure::TimeEvaluatorOptions timing;
  timing.number = number;
  timing.repeat = repeat;
  timing.min_repeat_ms = min_repeat_ms;
  if (flush_cache) {  // every timed call a cold one
    if (app.count("--number") == 0) timing.number = 1;
    if (app.count("--min-repeat-ms") == 0) timing.min_repeat_ms = 0;
    if (app.count("--repeat") == 0) timing.repeat = 10;
  }
  const tt::bench::AnchorOptions anchor_options{timing, threads, flush_cache};
  std::printf("# %s, %d thread(s), %s, %s tuner, %lld trials per layer%s%s\n", model.model.c_str(),
              threads, target.spec.c_str(), tuner_name.c_str(), static_cast<long long>(trials),
              int8 ? ", int8 (uint8 x int8 -> int32)" : "",
              flush_cache ? ", caches flushed before every round (both sides)" : "");
  if (peak.gflops > 0)
    std::printf(
        "# measured peak on %d thread(s): %.1f G%s (%s loop)\n", threads, peak.gflops,
        int8 ? "OPS" : "FLOPS",
        peak.amx_tiles
            ? "AMX tdpbusd"
            : (std::to_string(peak.vector_bits) + "-bit " + (int8 ? "VNNI" : "FMA")).c_str());
  else
    std::printf("# no VNNI on this CPU: no int8 peak\n");
  std::printf("%-32s %-44s %9s %9s %7s %6s %6s  %s\n", "layer", "workload", "ours", "oneDNN",
              "ratio", "%pk", "dnn%pk", "template [best config] [oneDNN impl]");

  double log_ratio_sum = 0;
  int rows = 0;
  // Per workload, each side's fastest algorithm (direct or Winograd) and how often it runs.
  struct LayerTime {
    double ours = 1e30, anchor = 1e30, uses = 1;
  };
  std::map<std::string, LayerTime> layer_times;
  for (const tt::tuner::ExtractedTask& extracted : extraction->tasks) {
    if (!only.empty() &&
        (extracted.nodes.empty() || extracted.nodes.front().find(only) == std::string::npos))
      continue;
    std::optional<ss::Task> task = extracted.task;
    if (int8 &&
        !ss::is_quantized(std::visit([](const auto& w) { return w.precision; }, task->workload)))
      task = quantized(*task);
    if (!task) continue;  // no int8 template runs it
    const auto* conv = std::get_if<ss::Conv2dWorkload>(&task->workload);
    const auto* dense = std::get_if<ss::DenseWorkload>(&task->workload);
    if (!conv && !dense) continue;  // oneDNN has no anchor for it here
    if (conv && conv->groups != 1) continue;
    const ss::Template* tmpl = ss::find_template(task->template_name);
    const bool winograd = tmpl && tmpl->algorithm() != ss::kDirectAlgorithm;
    const std::string label = layer_label(extracted) + (winograd ? " (wino)" : "");

    auto space = ss::make_config_space(*task);
    if (!space) {
      std::printf("%-32s %s\n", label.c_str(), space.error().message.c_str());
      continue;
    }
    tt::measure::MeasureOptions mo;
    mo.timing = timing;
    mo.threads = threads;
    mo.flush_cache = flush_cache;
    auto local = tt::measure::LocalMeasurer::create(*task, mo);
    if (!local) {
      std::printf("%-32s %s\n", label.c_str(), local.error().message.c_str());
      continue;
    }
    tt::tuner::LocalMeasurerAdapter measurer(std::move(*local));
    tt::tuner::TunerOptions topt;
    topt.name = tuner_name;
    topt.seed = seed;
    topt.threads = threads;
    topt.transfer_if_available = true;
    topt.device_key = measurer.device_key();
    auto tuner = tt::tuner::make_tuner(*task, *space, topt, store->get());
    if (!tuner) {
      std::fprintf(stderr, "error: %s\n", tuner.error().message.c_str());
      return 2;
    }
    tt::tuner::TuneOptions to;
    to.trials = trials;
    to.run_id = "layer-bench-" + std::to_string(threads) + "t-" + (flush_cache ? "flushed-" : "") +
                ss::workload_key(*task);
    auto result = tt::tuner::tune_task(
        *task, *space, **tuner, measurer, store->get(), to, [&](const tt::tuner::TuneProgress& p) {
          std::fprintf(stderr, "\r%-32s %lld/%lld best %.1f G  ", label.c_str(),
                       static_cast<long long>(p.done), static_cast<long long>(p.total),
                       p.best_gflops);
        });
    std::fprintf(stderr, "\n");
    if (!result || !result->best_config) {
      std::printf("%-32s tuning failed%s\n", label.c_str(),
                  result ? "" : (": " + result.error().message).c_str());
      continue;
    }

    const double flop = ss::task_flop(*task);
    std::vector<double> ours, anchor;
    std::string impl;
    for (int round = 0; round < rounds; ++round) {
      auto r = measurer.measure(*space, {*result->best_config});
      if (r && (*r)[0].ok()) ours.push_back(flop / (*r)[0].mean_cost() / 1e9);
      const tt::bench::AnchorResult a =
          conv ? tt::bench::onednn_conv2d(*conv, anchor_options, winograd)
               : tt::bench::onednn_dense(*dense, anchor_options);
      anchor.push_back(a.gflops);
      impl = a.impl;
    }
    const double o = median(ours), a = median(anchor);
    const double ratio = a > 0 && o > 0 ? o / a : 0;
    if (ratio > 0) {
      log_ratio_sum += std::log(ratio);
      ++rows;
      LayerTime& lt = layer_times[ss::describe_workload(task->workload)];
      lt.uses = static_cast<double>(std::max<size_t>(extracted.nodes.size(), 1));
      lt.ours = std::min(lt.ours, flop / (o * 1e9));
      lt.anchor = std::min(lt.anchor, flop / (a * 1e9));
    }
    auto share = [&](double g) { return peak.gflops > 0 ? 100.0 * g / peak.gflops : 0.0; };
    std::printf("%-32s %-44s %9.1f %9.1f %7.3f %6.1f %6.1f  %s [%s] [%s]\n", label.c_str(),
                ss::describe_workload(task->workload).substr(0, 44).c_str(), o, a, ratio, share(o),
                share(a), task->template_name.c_str(),
                space->describe(*result->best_config).c_str(), impl.c_str());
    // Whether int8 wants a Winograd algorithm (AutoTVM has none): oneDNN's, where it has one
    // for the shape, beside its direct convolution and ours.
    if (conv && ss::is_quantized(conv->precision) && conv->kernel_h == 3 && conv->kernel_w == 3 &&
        conv->stride_h == 1 && conv->stride_w == 1) {
      const tt::bench::AnchorResult w = tt::bench::onednn_conv2d(*conv, anchor_options, true);
      std::printf("%-32s %-44s %9s %9.1f %7.3f %6s %6.1f  oneDNN's Winograd, effective [%s]\n",
                  (label + " (wino)").c_str(), "", "-", w.gflops, w.gflops > 0 ? o / w.gflops : 0.0,
                  "-", share(w.gflops), w.impl.c_str());
    }
    std::fflush(stdout);
  }
  // Measured again: a peak far below the first says the machine was busy at the start.
  const tt::Peak later = measure_peak();
  if (later.gflops > 0)
    std::printf("# the peak loop again after the last layer: %.1f (the %%pk columns: %.1f)\n",
                later.gflops, peak.gflops);
  if (rows) {
    double ours_seconds = 0, anchor_seconds = 0;
    for (const auto& [key, lt] : layer_times) {
      ours_seconds += lt.uses * lt.ours;
      anchor_seconds += lt.uses * lt.anchor;
    }
    std::printf("geomean ratio ours/oneDNN (speed): %.3f over %d layers\n",
                std::exp(log_ratio_sum / rows), rows);
    std::printf(
        "the model's layers, each run as often as the model runs it, each side's faster "
        "algorithm: ours %.2f ms, oneDNN %.2f ms, time ratio %.3f\n",
        ours_seconds * 1e3, anchor_seconds * 1e3, ours_seconds / anchor_seconds);
  }
  std::printf("records: %s\n", db_path.c_str());
  return 0;
}
