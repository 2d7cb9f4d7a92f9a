// Implements benchmark.h.
#include "compiler/runtime/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "compiler/measure/time_evaluator.h"
#include "support/memory_bandwidth.h"

namespace tensortune::runtime {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Bytes of a step's kernel arguments and output, each buffer once.
int64_t step_bytes(const CompiledNetwork& net, const Step& step) {
  if (step.args.empty()) return 0;
  std::vector<int> values{static_cast<int>(step.output)}, params;
  for (const ArgRef& a : step.args)
    (a.kind == ArgRef::Kind::kValue ? values : params).push_back(a.index);
  auto once = [](std::vector<int>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  once(values);
  once(params);
  int64_t bytes = 0;
  for (int v : values) {
    if (v < 0) continue;
    const auto& t = net.graph.type(static_cast<graph::ValueId>(v));
    bytes += num_elements(t.shape) * element_size(t.dtype);
  }
  for (int p : params) {
    const graph::Tensor& t = net.params.at(static_cast<size_t>(p));
    bytes += t.size() * element_size(t.dtype);
  }
  return bytes;
}

}  // namespace

Expected<BenchResult> benchmark(Executable& exe, const BenchOptions& options) {
  if (options.repeat < 1)
    return invalid_argument("repeat = " + std::to_string(options.repeat) + ", must be at least 1");
  if (options.number < 1)
    return invalid_argument("number = " + std::to_string(options.number) + ", must be at least 1");
  Status failed;
  auto run = [&] {
    if (Status s = exe.run(); !s && failed) failed = s;
  };
  // With --profile the time evaluator only settles `number` (its warm-up run and growth); the
  // timed rounds then alternate, unprofiled and profiled, so that a noisy neighbour slows both
  // alike and the comparison stays fair.
  measure::TimeEvaluatorOptions te;
  te.number = options.number;
  te.repeat = options.profile ? 1 : options.repeat;
  te.min_repeat_ms = options.min_repeat_ms;
  te.timeout_s = 1e9;
  const measure::TimingResult timing = measure::time_evaluator(run, {}, te);
  if (!failed) return failed.error();

  BenchResult r;
  r.threads = exe.threads();
  r.repeat = options.repeat;
  r.number = timing.number;
  r.warmup_ms = timing.warmup_seconds * 1e3;
  for (double s : timing.round_seconds) r.round_ms.push_back(s * 1e3);
  const auto& steps = exe.network().steps;
  std::vector<double> profiled_rounds;
  std::vector<std::vector<double>> step_rounds(steps.size());
  if (options.profile) {
    r.round_ms.clear();
    std::vector<double> warmup(steps.size(), 0.0);
    TT_RETURN_IF_ERROR(exe.run(&warmup));  // the profiled path's own warm-up, not counted
    for (int round = 0; round < r.repeat; ++round) {
      auto start = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < r.number; ++i) TT_RETURN_IF_ERROR(exe.run());
      r.round_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count() /
          double(r.number));
      std::vector<double> step_seconds(steps.size(), 0.0);
      start = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < r.number; ++i) TT_RETURN_IF_ERROR(exe.run(&step_seconds));
      profiled_rounds.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count() /
          double(r.number));
      for (size_t k = 0; k < steps.size(); ++k)
        step_rounds[k].push_back(step_seconds[k] * 1e3 / double(r.number));
    }
  }
  r.median_ms = median(r.round_ms);
  r.min_ms = *std::min_element(r.round_ms.begin(), r.round_ms.end());
  r.max_ms = *std::max_element(r.round_ms.begin(), r.round_ms.end());
  double flop = 0;
  for (const Step& s : exe.network().steps) flop += s.flop;
  r.gflops = flop / (r.median_ms * 1e-3) / 1e9;
  if (!options.profile) return r;

  r.profiled_median_ms = median(profiled_rounds);
  for (size_t i = 0; i < steps.size(); ++i) {
    StepProfile p;
    p.label = steps[i].label;
    if (!steps[i].nodes.empty())
      p.node = exe.network().graph.nodes()[static_cast<size_t>(steps[i].nodes[0])].name;
    p.kind = steps[i].kind;
    p.calls = r.number * r.repeat;
    p.mean_ms = median(step_rounds[i]);
    p.gflops = steps[i].flop > 0 ? steps[i].flop / (p.mean_ms * 1e-3) / 1e9 : 0;
    p.bytes = step_bytes(exe.network(), steps[i]);
    p.gbs = p.mean_ms > 0 ? double(p.bytes) / (p.mean_ms * 1e-3) / 1e9 : 0;
    r.profile_sum_ms += p.mean_ms;
    r.steps.push_back(p);
  }
  if (options.triad_mib > 0)
    r.triad_gbs = measure_triad_bandwidth(r.threads, options.triad_mib << 20, 5).median_gbs;
  return r;
}

std::string format_profile(const Executable& exe, const BenchResult& r) {
  std::string out;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "Profile of %s: per step (one fusion group each), %lld calls = %d rounds x %lld runs after 1 "
      "warm-up "
      "run not counted, rounds alternating with the end-to-end timer's; ms/call is the median over "
      "rounds; %d thread%s; steady clock around each step; no cache flush.\n",
      exe.network().model.c_str(), static_cast<long long>(r.number * r.repeat), r.repeat,
      static_cast<long long>(r.number), r.threads, r.threads == 1 ? "" : "s");
  out += line;
  if (r.triad_gbs > 0) {
    std::snprintf(line, sizeof line,
                  "Memory bandwidth (STREAM triad, %d thread%s): %.1f GB/s. GB/s counts each "
                  "argument and the output once per call; %%BW is its share of the triad (a "
                  "step whose data stay in cache can pass 100%%).\n",
                  r.threads, r.threads == 1 ? "" : "s", r.triad_gbs);
    out += line;
  }
  std::snprintf(line, sizeof line, "%4s  %-36s %-9s %10s %7s %7s %8s %8s %6s\n", "#", "step",
                "kind", "ms/call", "calls", "share", "GFLOPS", "GB/s", "%BW");
  out += line;
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const auto& s = r.steps[i];
    std::string label = s.label.size() > 36 ? s.label.substr(0, 33) + "..." : s.label;
    char gbs[16] = "-", share[16] = "-";
    if (s.gbs > 0) std::snprintf(gbs, sizeof gbs, "%.1f", s.gbs);
    if (s.gbs > 0 && r.triad_gbs > 0)
      std::snprintf(share, sizeof share, "%.0f%%", 100.0 * s.gbs / r.triad_gbs);
    std::snprintf(line, sizeof line, "%4zu  %-36s %-9s %10.3f %7lld %6.1f%% %8s %8s %6s\n", i + 1,
                  label.c_str(), step_kind_name(s.kind), s.mean_ms, static_cast<long long>(s.calls),
                  100.0 * s.mean_ms / std::max(r.profile_sum_ms, 1e-12),
                  s.gflops > 0 ? std::to_string(static_cast<int>(s.gflops + 0.5)).c_str() : "-",
                  gbs, share);
    out += line;
  }
  const double ratio = r.profile_sum_ms / r.median_ms;
  std::snprintf(line, sizeof line,
                "sum of steps %.3f ms per run; end-to-end median %.3f ms (unprofiled), %.3f ms "
                "(around the profiled "
                "runs); sum / end-to-end = %.3f (%s within 10%%)\n",
                r.profile_sum_ms, r.median_ms, r.profiled_median_ms, ratio,
                ratio >= 0.9 && ratio <= 1.1 ? "agrees" : "does NOT agree");
  out += line;
  return out;
}

}  // namespace tensortune::runtime
