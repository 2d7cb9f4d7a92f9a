// How fast each tuner finds good configs on the ResNet-18 conv2d_NCHWc tasks (batch 1, fp32,
// one thread): for random, GA and XGB with three seeds each, the trials needed to reach 95% of
// the best-known throughput and the best reached within the budget, then geometric means.
//
// Every config is measured once per task and the result reused by every tuner and seed that
// proposes it (a memo in front of the real measurer), so all tuners see the same numbers and
// noise cannot favour one of them. The best-known config is the best of everything measured
// (exhaustive over the space with --exhaustive-below N for spaces of fewer than N valid
// configs). XGB's training and search time is reported as a share of the tuning wall-clock it
// would have had with real measurements: its own time plus the measured cost of its trials.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/local_measurer.h"
#include "records/record_store.h"
#include "tuner/resnet18_workloads.h"
#include "tuner/tuner_factory.h"
#include "tuner/tuning_loop.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

/// Measures each config once and replays the result afterwards; logs what each run saw.
class MemoMeasurer final : public tt::tuner::Measurer {
 public:
  explicit MemoMeasurer(std::unique_ptr<tt::measure::LocalMeasurer> m) : m_(std::move(m)) {}
  /// Seeds the memo with earlier measurements (so that a longer rerun sees the same numbers).
  void prefill(int64_t index, const ss::MeasureResult& r) { memo_.emplace(index, r); }
  tt::Expected<std::vector<ss::MeasureResult>> measure(
      const ss::ConfigSpace& space, const std::vector<ss::Config>& configs) override {
    std::vector<ss::Config> fresh;
    for (const auto& c : configs)
      if (!memo_.count(c.index)) fresh.push_back(c);
    if (!fresh.empty()) {
      auto results = m_->measure(space, fresh);
      for (size_t i = 0; i < fresh.size(); ++i) memo_[fresh[i].index] = results[i];
    }
    std::vector<ss::MeasureResult> out;
    for (const auto& c : configs) {
      out.push_back(memo_.at(c.index));
      log_configs.push_back(c);
      log_results.push_back(out.back());
    }
    return out;
  }
  std::string device_key() const override { return m_->options().device_key; }
  int threads() const override { return m_->threads(); }
  const std::map<int64_t, ss::MeasureResult>& memo() const { return memo_; }
  std::vector<ss::Config> log_configs;
  std::vector<ss::MeasureResult> log_results;

 private:
  std::unique_ptr<tt::measure::LocalMeasurer> m_;
  std::map<int64_t, ss::MeasureResult> memo_;
};

double gflops(const ss::Task& t, const ss::MeasureResult& r) {
  return tt::tuner::result_gflops(t, r);
}

struct RunStats {
  int trials_to_95 = -1;  ///< -1: not reached within the budget
  double best_fraction = 0;
  double tuner_s = 0, measure_s = 0;
};

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Tuner efficiency on ResNet-18 conv2d_NCHWc tasks: trials to 95% of the best known, per "
      "tuner"};
  int64_t budget = 200;
  std::vector<std::string> only;
  std::string replay_db;
  int64_t random_trials = 0;
  std::string db_path = "tuner_efficiency.db";
  int64_t exhaustive_below = 0;
  double min_repeat_ms = 20;
  std::vector<std::string> tuners{"random", "ga", "xgb"};
  std::vector<uint64_t> seeds{0, 1, 2};
  bool whole_too = false;
  app.add_option("--trials", budget, "trial budget per tuner run")->capture_default_str();
  app.add_option("--only", only, "run only tasks whose name contains one of these");
  app.add_option("--replay-db", replay_db,
                 "reuse the measurements of an earlier run's DB (same numbers; only new configs "
                 "are measured)");
  app.add_option(
      "--random-trials", random_trials,
      "budget of the random tuner if larger than --trials (so that its t95 is not censored); "
      "best% columns still use the first --trials trials");
  app.add_option("--db", db_path, "record DB for the curves (records plot)")->capture_default_str();
  app.add_option("--exhaustive-below", exhaustive_below,
                 "measure every valid config of spaces smaller than this")
      ->capture_default_str();
  app.add_option("--min-repeat-ms", min_repeat_ms,
                 "time_evaluator min_repeat_ms (number=10, repeat=3)")
      ->capture_default_str();
  app.add_option("--tuners", tuners, "tuners to compare")->capture_default_str();
  app.add_option("--seeds", seeds, "seeds per tuner")->capture_default_str();
  app.add_flag("--whole-space", whole_too,
               "also run each tuner over every valid config (columns marked *), beside the "
               "configs the CPU model offers, on the same measurements");
  CLI11_PARSE(app, argc, argv);

  auto store = tt::records::RecordStore::open(db_path);
  if (!store) {
    std::fprintf(stderr, "error: %s\n", store.error().message.c_str());
    return 1;
  }
  const ss::Target target = tt::codegen::host_target();
  if (whole_too) {
    const size_t n = tuners.size();
    for (size_t i = 0; i < n; ++i) tuners.push_back(tuners[i] + "*");
  }
  std::printf("# CPU model %s\n", ss::describe_cpu_model(ss::cpu_model_of(target)).c_str());
  std::printf(
      "# tuner efficiency, %s, one thread, budget %lld trials, seeds %zu, protocol number=10 "
      "repeat=3 "
      "min_repeat_ms=%.0f; t95 = trials to reach 95%% of the best known ('>' = not within "
      "budget)\n",
      target.spec.c_str(), static_cast<long long>(budget), seeds.size(), min_repeat_ms);
  std::printf("%-26s %6s %7s %9s", "task", "valid", "offered", "bestGF");
  for (const auto& t : tuners) std::printf(" %18s", (t + " t95").c_str());
  for (const auto& t : tuners) std::printf(" %10s", (t + " best%").c_str());
  std::printf(" %9s\n", "xgb time%");
  std::map<std::string, std::vector<double>> t95_all;
  std::vector<double> xgb_share;
  for (const auto& named : tt::tuner::resnet18_workloads()) {
    if (named.template_name != ss::kConv2dNCHWc) continue;
    if (!only.empty() && std::none_of(only.begin(), only.end(), [&](const std::string& o) {
          return named.name.find(o) != std::string::npos;
        }))
      continue;
    const ss::Task task = *ss::make_task(named.template_name, named.workload, target);
    const ss::ConfigSpace space = *ss::make_config_space(task);
    int64_t valid = 0;
    for (int64_t i = 0; i < space.size(); ++i) valid += space.is_valid_index(i);
    tt::measure::MeasureOptions mo;
    mo.timing.min_repeat_ms = min_repeat_ms;
    MemoMeasurer memo(std::move(*tt::measure::LocalMeasurer::create(task, mo)));
    if (!replay_db.empty()) {
      auto old = tt::records::RecordStore::open(replay_db);
      if (!old) {
        std::fprintf(stderr, "error: %s\n", old.error().message.c_str());
        return 1;
      }
      auto records = (*old)->all_records();
      for (const auto& r : *records)
        if (r.task.workload_key == ss::workload_key(task)) memo.prefill(r.config_index, r.result);
    }
    const int64_t task_id = *(*store)->ensure_task(tt::records::task_info(task, space));

    std::map<std::string, std::vector<RunStats>> stats;
    std::map<std::string, std::vector<std::vector<ss::Config>>> sequences;
    const ss::ConfigSpace whole = space.whole();
    for (const auto& tname : tuners)
      for (uint64_t seed : seeds) {
        const bool over_whole = tname.back() == '*';
        const ss::ConfigSpace& walked = over_whole ? whole : space;
        tt::tuner::TunerOptions to;
        to.name = over_whole ? tname.substr(0, tname.size() - 1) : tname;
        to.seed = seed;
        auto tuner = tt::tuner::make_tuner(task, walked, to, nullptr);
        if (!tuner) {
          std::fprintf(stderr, "error: %s\n", tuner.error().message.c_str());
          return 1;
        }
        memo.log_configs.clear();
        memo.log_results.clear();
        tt::tuner::TuneOptions o;
        o.trials = to.name == "random" ? std::max(budget, random_trials) : budget;
        o.batch_size = 8;
        auto r = tt::tuner::tune_task(
            task, walked, **tuner, memo, nullptr, o, [&](const tt::tuner::TuneProgress& p) {
              std::fprintf(stderr, "\r%-26s %-6s seed %llu %lld/%lld (distinct measured %zu)   ",
                           named.name.c_str(), tname.c_str(), static_cast<unsigned long long>(seed),
                           static_cast<long long>(p.done), static_cast<long long>(p.total),
                           memo.memo().size());
            });
        RunStats s;
        s.tuner_s = r->tuner_seconds;
        for (const auto& res : memo.log_results) s.measure_s += res.all_cost_s;
        stats[tname].push_back(s);
        sequences[tname].push_back(memo.log_configs);
        std::vector<int64_t> trials(memo.log_configs.size());
        for (size_t i = 0; i < trials.size(); ++i) trials[i] = static_cast<int64_t>(i);
        (void)(*store)->add_results(task_id, space, memo.log_configs, memo.log_results,
                                    {tname, tname + "-seed" + std::to_string(seed)}, trials);
      }
    if (exhaustive_below > 0 && valid < exhaustive_below) {
      std::vector<ss::Config> all;
      for (int64_t i = 0; i < space.size(); ++i)
        if (space.is_valid_index(i)) all.push_back(*space.config_at(i));
      for (size_t b = 0; b < all.size(); b += 16)
        (void)memo.measure(space, std::vector<ss::Config>(
                                      all.begin() + b, all.begin() + std::min(all.size(), b + 16)));
    }
    double best_known = 0;
    for (const auto& [i, r] : memo.memo()) best_known = std::max(best_known, gflops(task, r));
    std::fprintf(stderr, "\n");
    std::printf("%-26s %6lld %7lld %9.1f", named.name.c_str(), static_cast<long long>(valid),
                static_cast<long long>(space.offered_count()), best_known);
    for (const auto& tname : tuners) {
      std::string cells;
      for (size_t k = 0; k < seeds.size(); ++k) {
        RunStats& s = stats[tname][k];
        double best = 0;
        const auto& seq = sequences[tname][k];
        for (size_t t = 0; t < seq.size(); ++t) {
          best = std::max(best, gflops(task, memo.memo().at(seq[t].index)));
          if (s.trials_to_95 < 0 && best >= 0.95 * best_known)
            s.trials_to_95 = static_cast<int>(t + 1);
          if (static_cast<int64_t>(t + 1) == budget)
            s.best_fraction = best_known > 0 ? best / best_known : 0;
        }
        if (static_cast<int64_t>(seq.size()) < budget)
          s.best_fraction = best_known > 0 ? best / best_known : 0;
        const int64_t run_budget = static_cast<int64_t>(seq.size());
        cells += (k ? "/" : "") + (s.trials_to_95 < 0 ? ">" + std::to_string(run_budget)
                                                      : std::to_string(s.trials_to_95));
        // Unreached runs count as their budget + 1 in the geometric mean (a lower bound on their
        // cost).
        t95_all[tname].push_back(s.trials_to_95 < 0 ? static_cast<double>(run_budget + 1)
                                                    : s.trials_to_95);
      }
      std::printf(" %18s", cells.c_str());
    }
    for (const auto& tname : tuners) {
      double mean = 0;
      for (const auto& s : stats[tname]) mean += s.best_fraction;
      std::printf(" %9.1f%%", 100 * mean / static_cast<double>(stats[tname].size()));
    }
    double share = 0;
    if (stats.count("xgb") && !stats["xgb"].empty()) {
      double tuner_s = 0, measure_s = 0;
      for (const auto& s : stats["xgb"]) {
        tuner_s += s.tuner_s;
        measure_s += s.measure_s;
      }
      share = tuner_s / (tuner_s + measure_s);
      xgb_share.push_back(share);
    }
    std::printf(" %8.1f%%\n", 100 * share);
    std::fflush(stdout);
  }
  std::printf("geomean t95:");
  for (const auto& tname : tuners) std::printf("  %s %.1f", tname.c_str(), geomean(t95_all[tname]));
  if (t95_all.count("xgb") && t95_all.count("random"))
    std::printf("  | xgb/random %.3f", geomean(t95_all["xgb"]) / geomean(t95_all["random"]));
  for (const auto& tname : tuners)
    if (tname.back() != '*' && t95_all.count(tname + "*"))
      std::printf("  | %s offered/whole %.3f", tname.c_str(),
                  geomean(t95_all[tname]) / geomean(t95_all[tname + "*"]));
  double share_mean = 0;
  for (double s : xgb_share) share_mean += s;
  if (!xgb_share.empty())
    std::printf("  | xgb model time %.1f%% of tuning wall-clock",
                100 * share_mean / xgb_share.size());
  std::printf(
      "\nrecords: %s (curves: tensortune records plot --db %s --workload ... -o curves.png)\n",
      db_path.c_str(), db_path.c_str());
  return 0;
}
