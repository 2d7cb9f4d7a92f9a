// Tunes the ResNet-18 conv2d layers (and dense 1x512x1000) with the random tuner on one thread
// and prints, per layer, our best GFLOPS beside oneDNN's on the same shape (nChw16c), their
// ratio, and the geometric mean; plus seconds per tuning trial and the median JIT compile time.
// The 3x3 stride-1 layers get a second row: the same tuner on the Winograd template,
// against oneDNN's Winograd algorithm where this oneDNN has one for the shape (else its direct),
// in effective GFLOPS (the direct convolution's FLOPs over the time).
//
// The best config found by tuning is measured again beside oneDNN, alternating, and each side
// reports its median, so that a lucky draw during tuning does not flatter us.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "bench/bench_stats.h"
#include "bench/onednn_anchor.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/local_measurer.h"
#include "records/record_store.h"
#include "schedule_space/conv2d_winograd_template.h"
#include "tuner/index_tuners.h"
#include "tuner/resnet18_workloads.h"
#include "tuner/tuning_loop.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tensortune::bench::median;

int main(int argc, char** argv) {
  CLI::App app{
      "ResNet-18 layer tuning benchmark: tensortune (random tuner) vs oneDNN nChw16c, one thread"};
  int64_t trials = 300;
  uint64_t seed = 0;
  std::string only;
  std::string db_path;
  int64_t number = 10;
  int repeat = 3;
  double min_repeat_ms = 100;
  app.add_option("--trials", trials, "trials per layer")->capture_default_str();
  app.add_option("--seed", seed, "random tuner seed")->capture_default_str();
  app.add_option("--only", only, "run only layers whose name contains this");
  app.add_option("--db", db_path, "keep the records in this DB (default: a temporary file)");
  app.add_option("--number", number)->capture_default_str();
  app.add_option("--repeat", repeat)->capture_default_str();
  app.add_option("--min-repeat-ms", min_repeat_ms)->capture_default_str();
  bool no_winograd = false, winograd_only = false;
  app.add_flag("--no-winograd", no_winograd,
               "leave out the Winograd rows (3x3 stride-1 layers tuned as "
               "conv2d_NCHWc_winograd, beside oneDNN's Winograd)");
  app.add_flag("--winograd-only", winograd_only, "only the Winograd rows");
  bool int8 = false;
  app.add_flag("--int8", int8,
               "the layers quantized (uint8 x int8 -> int32), tuned as conv2d_NCHWc_int8 and "
               "dense_int8 against oneDNN's int8 convolution and inner product; GFLOPS are "
               "integer operations per second (layers whose channels the int8 templates do not "
               "take are left out)");
  CLI11_PARSE(app, argc, argv);

  // The 3x3 and 1x1 layers of stages 2-5 and the classifier (conv1 is not in the set).
  std::vector<tt::tuner::NamedTask> layers;
  for (const auto& t : tt::tuner::resnet18_workloads())
    if (t.name.rfind("conv1", 0) != 0) layers.push_back(t);
  if (db_path.empty())
    db_path = (std::filesystem::temp_directory_path() /
               ("tt_bench_" + std::to_string(::getpid()) + ".db"))
                  .string();
  auto store = tt::records::RecordStore::open(db_path);
  if (!store) {
    std::fprintf(stderr, "error: %s\n", store.error().message.c_str());
    return 1;
  }
  const ss::Target target = tt::codegen::host_target();
  tt::measure::TimeEvaluatorOptions timing;
  timing.number = number;
  timing.repeat = repeat;
  timing.min_repeat_ms = min_repeat_ms;
  std::printf(
      "# tensortune vs oneDNN, one thread, %s, random tuner, %lld trials per layer, protocol "
      "number=%lld "
      "repeat=%d min_repeat_ms=%.0f\n",
      target.spec.c_str(), static_cast<long long>(trials), static_cast<long long>(number), repeat,
      min_repeat_ms);
  std::printf("%-26s %10s %10s %7s %8s %9s  %s\n", "layer", "ours", "oneDNN", "ratio", "s/trial",
              "compile", "best config");
  double log_ratio_sum = 0, wino_log_ratio_sum = 0;
  int ratio_count = 0, wino_ratio_count = 0;
  std::vector<double> all_compile, all_trial;
  // One row: tune `template_name` on the layer, then re-measure its best beside the anchor.
  auto row = [&](const tt::tuner::NamedTask& l, const std::string& template_name,
                 const std::string& label, bool winograd_anchor) {
    auto task = ss::make_task(template_name, l.workload, target);
    if (!task) {
      std::printf("%-26s %s\n", label.c_str(), task.error().message.c_str());
      return;
    }
    auto space = ss::make_config_space(*task);
    tt::measure::MeasureOptions mo;
    mo.timing = timing;
    auto local = tt::measure::LocalMeasurer::create(*task, mo);
    tt::tuner::LocalMeasurerAdapter measurer(std::move(*local));
    tt::tuner::RandomTuner tuner(*space, seed);
    tt::tuner::TuneOptions to;
    to.trials = trials;
    to.run_id = "bench-" + label;
    const auto t0 = std::chrono::steady_clock::now();
    auto result = tt::tuner::tune_task(
        *task, *space, tuner, measurer, store->get(), to, [&](const tt::tuner::TuneProgress& p) {
          std::fprintf(stderr, "\r%-26s %lld/%lld best %.1f GFLOPS  ", label.c_str(),
                       static_cast<long long>(p.done), static_cast<long long>(p.total),
                       p.best_gflops);
        });
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "\n");
    if (!result || !result->best_config) {
      std::printf("%-26s tuning failed\n", label.c_str());
      return;
    }
    auto records = (*store)->all_records();
    std::vector<double> compile;
    for (const auto& r : *records)
      if (r.task.workload_key == ss::workload_key(*task) && r.result.compile_s > 0)
        compile.push_back(r.result.compile_s);
    all_compile.insert(all_compile.end(), compile.begin(), compile.end());
    const double per_trial = result->measured ? wall / static_cast<double>(result->measured) : 0;
    all_trial.push_back(per_trial);

    // Re-measure our best and the anchor alternately. GFLOPS are the direct convolution's
    // FLOPs over the time for both algorithms (effective GFLOPS), so rows compare as speeds.
    std::vector<double> ours, anchor;
    std::string impl;
    for (int round = 0; round < 3; ++round) {
      auto r = measurer.measure(*space, {*result->best_config});
      if (r && (*r)[0].ok()) ours.push_back(ss::task_flop(*task) / (*r)[0].mean_cost() / 1e9);
      const tt::bench::AnchorOptions anchor_options{timing};
      tt::bench::AnchorResult a =
          std::holds_alternative<ss::Conv2dWorkload>(l.workload)
              ? tt::bench::onednn_conv2d(std::get<ss::Conv2dWorkload>(l.workload), anchor_options,
                                         winograd_anchor)
              : tt::bench::onednn_dense(std::get<ss::DenseWorkload>(l.workload), anchor_options);
      anchor.push_back(a.gflops);
      impl = a.impl;
    }
    const double o = median(ours), a = median(anchor);
    const double ratio = a > 0 ? o / a : 0;
    if (ratio > 0) {  // the Winograd rows have their own geometric mean
      (winograd_anchor ? wino_log_ratio_sum : log_ratio_sum) += std::log(ratio);
      ++(winograd_anchor ? wino_ratio_count : ratio_count);
    }
    std::printf("%-26s %10.2f %10.2f %7.3f %8.3f %7.1fms  %s [oneDNN %s]\n", label.c_str(), o, a,
                ratio, per_trial, median(compile) * 1e3,
                space->describe(*result->best_config).c_str(), impl.c_str());
    std::fflush(stdout);
  };
  for (const tt::tuner::NamedTask& l : layers) {
    if (!only.empty() && l.name.find(only) == std::string::npos) continue;
    if (int8) {
      tt::tuner::NamedTask q = l;
      std::visit([](auto& w) { w.precision = ss::Precision::kUInt8Int8; }, q.workload);
      const auto templates = ss::templates_for(q.workload, "llvm");
      if (!templates.empty())
        row(q, std::string(templates.front()->name()), "int8 " + l.name, false);
      continue;
    }
    if (!winograd_only) row(l, l.template_name, l.name, false);
    // 3x3 stride-1 layers also as Winograd, against oneDNN's Winograd where it has one.
    const auto* conv = std::get_if<ss::Conv2dWorkload>(&l.workload);
    if (!no_winograd && conv && ss::winograd_accepts(*conv))
      row(l, ss::kConv2dNCHWcWinograd, "wino " + l.name, true);
  }
  if (ratio_count)
    std::printf(
        "geomean ratio ours/oneDNN: %.3f over %d layers | median s/trial %.3f | median JIT compile "
        "%.1f ms\n",
        std::exp(log_ratio_sum / ratio_count), ratio_count, median(all_trial),
        median(all_compile) * 1e3);
  if (wino_ratio_count)
    std::printf(
        "geomean ratio of our Winograd rows to oneDNN's (Winograd where it has one): %.3f "
        "over %d layers\n",
        std::exp(wino_log_ratio_sum / wino_ratio_count), wino_ratio_count);
  std::printf("records: %s\n", db_path.c_str());
  return 0;
}
