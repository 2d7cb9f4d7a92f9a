#include "tuner/tuning_loop.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "support/stopwatch.h"

namespace tensortune::tuner {

namespace ss = schedule_space;

double result_gflops(const ss::Task& task, const ss::MeasureResult& r) {
  if (!r.ok() || r.mean_cost() <= 0) return 0;
  return ss::task_flop(task) / r.mean_cost() / 1e9;
}

Expected<TuneResult> tune_task(const ss::Task& task, const ss::ConfigSpace& space, Tuner& tuner,
                               Measurer& measurer, records::RecordStore* store,
                               const TuneOptions& options, const ProgressFn& progress) {
  if (options.trials < 1)
    return invalid_argument("trials = " + std::to_string(options.trials) + ", must be >= 1");
  if (options.batch_size < 1)
    return invalid_argument("batch_size = " + std::to_string(options.batch_size) +
                            ", must be >= 1");
  if (options.early_stopping < 0)
    return invalid_argument("early_stopping = " + std::to_string(options.early_stopping) +
                            ", must be >= 0");
  const Stopwatch start;
  TuneResult out;
  TuneProgress& p = out.progress;
  p.total = options.trials;
  int64_t task_id = -1;
  if (store) {
    TT_ASSIGN_OR_RETURN(task_id, store->ensure_task(records::task_info(task, space)));
    TT_ASSIGN_OR_RETURN(
        auto measured, store->measured_indices(task_id, measurer.device_key(), measurer.threads()));
    tuner.skip(measured);
    TT_ASSIGN_OR_RETURN(auto prior,
                        store->task_records(task_id, measurer.device_key(), measurer.threads()));
    std::vector<ss::Config> prior_configs;
    std::vector<ss::MeasureResult> prior_results;
    std::set<int64_t> seen;
    for (const auto& r : prior) {
      if (r.run_id == options.run_id) ++out.resumed;
      if (!seen.insert(r.config_index).second) continue;
      auto c = space.config_at(r.config_index);
      if (!c) continue;
      prior_configs.push_back(*c);
      prior_results.push_back(r.result);
    }
    if (!prior_configs.empty()) {
      const Stopwatch t0;
      tuner.update(prior_configs, prior_results);
      out.tuner_seconds += t0.seconds();
    }
    out.replayed = static_cast<int64_t>(prior_configs.size());
    p.done = out.resumed;
    TT_ASSIGN_OR_RETURN(auto best, store->best(ss::workload_key(task), task.target.spec,
                                               measurer.device_key(), measurer.threads()));
    if (best) {
      p.best_gflops = best->gflops;
      auto c = space.config_at(best->record.config_index);
      if (c) out.best_config = *c;
    }
  }
  int64_t last_improvement = p.done;
  const records::RunInfo run{tuner.name(), options.run_id};
  while (p.done < options.trials && tuner.has_next()) {
    if (options.early_stopping > 0 && p.done - last_improvement >= options.early_stopping) break;
    const int n = static_cast<int>(std::min<int64_t>(options.batch_size, options.trials - p.done));
    Stopwatch tt0;
    std::vector<ss::Config> batch = tuner.next_batch(n);
    out.tuner_seconds += tt0.seconds();
    if (batch.empty()) break;
    const Stopwatch t0;
    TT_ASSIGN_OR_RETURN(std::vector<ss::MeasureResult> results, measurer.measure(space, batch));
    out.measure_seconds += t0.seconds();
    if (results.size() != batch.size())
      return internal_error("measurer returned " + std::to_string(results.size()) +
                            " results for " + std::to_string(batch.size()) + " configs");
    std::vector<int64_t> trials;
    p.current_gflops = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      trials.push_back(p.done + static_cast<int64_t>(i));
      const double g = result_gflops(task, results[i]);
      if (!results[i].ok()) ++p.errors;
      out.timed_seconds += results[i].timed_seconds(options.repeat);
      p.current_gflops = std::max(p.current_gflops, g);
      if (g > p.best_gflops) {
        p.best_gflops = g;
        out.best_config = batch[i];
        last_improvement = p.done + static_cast<int64_t>(i) + 1;
      }
    }
    if (store) TT_RETURN_IF_ERROR(store->add_results(task_id, space, batch, results, run, trials));
    tt0.restart();
    tuner.update(batch, results);
    out.tuner_seconds += tt0.seconds();
    p.done += static_cast<int64_t>(batch.size());
    out.measured += static_cast<int64_t>(batch.size());
    p.elapsed_s = start.seconds();
    if (progress) progress(p);
    if (options.on_batch && !options.on_batch(p, batch, results)) {
      out.stopped = true;
      break;
    }
  }
  p.elapsed_s = start.seconds();
  return out;
}

}  // namespace tensortune::tuner
