#include "compiler/driver/tuned_configs.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "records/autotvm_log.h"
#include "records/record_decoding.h"
#include "records/record_store.h"
#include "schedule_space/config_transfer.h"
#include "support/log.h"

namespace tensortune::driver {

namespace ss = schedule_space;

namespace {

/// A dense layer or batch matmul at another token count (a sequence bucket, a batch size) is
/// the same layer: its weight shape (batch and layout, the one fixed axis) first, then the
/// nearest size.
double same_layer_affinity(const ss::Workload& want, const ss::Workload& tuned) {
  const auto nearness = [](double a, double b) {
    return 1.0 / (1.0 + std::abs(std::log2(std::max(a, 1.0) / std::max(b, 1.0))));
  };
  if (const auto* d = std::get_if<ss::DenseWorkload>(&want))
    if (const auto* t = std::get_if<ss::DenseWorkload>(&tuned))
      return 3.0 * (d->out_features == t->out_features && d->in_features == t->in_features) +
             nearness(double(d->batch), double(t->batch));
  if (const auto* b = std::get_if<ss::BatchMatmulWorkload>(&want))
    if (const auto* t = std::get_if<ss::BatchMatmulWorkload>(&tuned)) {
      // Attention's QK^T keeps its K (the head size) across lengths, its product with V its N.
      const bool same = b->batch == t->batch && b->transpose_b == t->transpose_b &&
                        ((b->k == t->k) != (b->n == t->n));
      return 3.0 * same + nearness(b->flop(), t->flop());
    }
  return 0;
}

}  // namespace

Expected<TunedConfigs> TunedConfigs::load(const std::string& path, const std::string& device_key,
                                          int vector_lanes, bool borrow, int threads) {
  std::ifstream probe(path, std::ios::binary);
  if (!probe) return not_found("cannot open records file " + path);
  char magic[16] = {};
  probe.read(magic, sizeof magic);
  const bool sqlite = std::string(magic, 15) == "SQLite format 3";
  std::unique_ptr<records::RecordStore> store;
  if (sqlite) {
    TT_ASSIGN_OR_RETURN(store, records::RecordStore::open(path));
  } else {
    // An AutoTVM log: read it into a private in-memory store, whose best query does the rest.
    TT_ASSIGN_OR_RETURN(store, records::RecordStore::open(":memory:"));
    std::ifstream log(path);
    records::ImportOptions import;
    import.device_key = device_key.empty() ? "autotvm-log" : device_key;
    import.vector_lanes = vector_lanes;
    import.skip_unsupported = true;  // a log mixes templates; use what maps
    TT_ASSIGN_OR_RETURN(auto stats, records::import_autotvm_log(*store, log, path, import));
    for (const auto& [name, skipped] : stats.skipped)
      logger("compiler")
          ->warn("{}: {} records of {} skipped: {}", path, skipped.count, name, skipped.reason);
  }
  // The device key is a filter of the query: a large archive's other keys are never read.
  records::RecordStore::BestQuery query;
  if (sqlite) query.device_key = device_key;
  // Per workload: its records of `threads` threads where it has some, else every count's.
  std::vector<records::BestRecord> best;
  std::set<std::string> at_threads;
  if (threads > 0) {
    query.threads = threads;
    TT_ASSIGN_OR_RETURN(best, store->query_best(query));
    for (const auto& b : best) at_threads.insert(b.record.task.workload_key);
    query.threads = 0;
  }
  TT_ASSIGN_OR_RETURN(auto any_count, store->query_best(query));
  for (auto& b : any_count)
    if (!at_threads.count(b.record.task.workload_key)) best.push_back(std::move(b));
  TunedConfigs out;
  out.source_ = path;
  out.borrow_ = borrow;
  std::set<std::string> other_keys;
  if (best.empty() && !query.device_key.empty()) {  // say which keys there are instead
    TT_ASSIGN_OR_RETURN(auto any_key, store->query_best({}));
    for (const auto& b : any_key) other_keys.insert(b.record.result.device_key);
  }
  auto wanted = [&](const std::string& key, int measured_threads) {
    return !at_threads.count(key) || measured_threads == threads;
  };
  std::map<std::string, double> gflops;
  int other_counts = 0;
  for (const auto& b : best) {
    if (!b.record.result.ok()) continue;
    const std::string& key = b.record.task.workload_key;
    if (!wanted(key, b.record.result.threads)) continue;
    if (gflops.count(key) && gflops[key] >= b.gflops) continue;
    other_counts += threads > 0 && !at_threads.count(key) && !gflops.count(key);
    gflops[key] = b.gflops;
    out.best_[key] = b.record.entity_json;
  }
  // Candidates come from the 20 fastest records of each group (the best-record tables): their
  // configs and costs only, whatever else a large archive holds.
  for (const ss::Template* t : ss::all_templates()) {
    TT_ASSIGN_OR_RETURN(auto top,
                        store->top_entities(std::string(t->name()), sqlite ? device_key : ""));
    for (auto& m : top)
      if (wanted(m.workload_key, m.threads))
        out.all_[m.workload_key].emplace_back(std::move(m.entity_json), m.mean_cost);
  }
  if (other_counts > 0)
    logger("compiler")
        ->warn(
            "{}: {} workloads have no records measured on {} threads; they take records of "
            "other thread counts (tune with --threads {} for this one)",
            path, other_counts, threads, threads);
  logger("compiler")->info("{} tuned workloads from {}", out.best_.size(), path);
  if (out.best_.empty() && !other_keys.empty()) {
    std::string keys;
    for (const auto& k : other_keys) keys += (keys.empty() ? "" : ", ") + k;
    logger("compiler")
        ->warn("{} has no records of device key {}, only of: {} (choose one with --device-key)",
               path, device_key, keys);
  }
  return out;
}

std::vector<TunedConfigs::Candidate> TunedConfigs::candidates(
    const ss::Workload& w, const std::vector<const ss::Template*>& templates,
    const ss::Target& target) const {
  std::vector<Candidate> out;
  for (const ss::Template* t : templates) {
    auto task = ss::make_task(std::string(t->name()), w, target);
    if (!task) continue;
    auto it = all_.find(ss::workload_key(*task));
    if (it == all_.end()) continue;
    auto space = ss::make_config_space(*task);
    if (!space) continue;
    for (const auto& [entity_json, cost] : it->second) {
      auto config = records::decode_config(*space, entity_json);
      if (!config) continue;
      ss::TemplateConfig kernel{*task, *space, std::move(*config)};
      const ss::KernelSignature sig = kernel.signature();
      out.push_back(
          Candidate{std::move(kernel), cost, sig.ic_block, sig.oc_block, entity_json, it->first});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
  return out;
}

std::vector<TunedConfigs::Candidate> TunedConfigs::candidates_by_blocks(
    const ss::Workload& w, const std::vector<const ss::Template*>& templates,
    const ss::Target& target) const {
  std::vector<Candidate> out;
  std::set<std::pair<int64_t, int64_t>> seen;
  for (Candidate& c : candidates(w, templates, target))  // fastest first
    if (seen.insert({c.ic_block, c.oc_block}).second) out.push_back(std::move(c));
  return out;
}

std::optional<ss::Config> TunedConfigs::borrow_for(const ss::Task& task,
                                                   const ss::ConfigSpace& space) {
  if (!borrow_) return std::nullopt;
  auto [refs, inserted] = references_.try_emplace(task.template_name);
  if (inserted) {
    for (const auto& [key, entity_json] : best_) {
      // The template's own records only: their spaces are all that is built.
      auto tuned = records::task_from_workload_key(key, task.target.spec, task.target.vector_lanes);
      if (!tuned || tuned->template_name != task.template_name) continue;
      auto tuned_space = ss::make_config_space(*tuned);
      if (!tuned_space) continue;
      auto config = records::decode_config(*tuned_space, entity_json);
      if (!config) continue;
      refs->second.push_back({tuned->workload, std::move(*tuned_space), std::move(*config)});
    }
  }
  const auto* conv = std::get_if<ss::Conv2dWorkload>(&task.workload);
  const Reference* nearest = nullptr;
  double best_score = 0;
  for (const Reference& r : refs->second) {
    double score = ss::transfer_affinity(space, r.space);
    // Same kernel and stride first (they shape the loop nest), then the divisor overlap.
    if (const auto* rc = std::get_if<ss::Conv2dWorkload>(&r.workload); conv && rc)
      score += 2.0 * (rc->kernel_h == conv->kernel_h && rc->kernel_w == conv->kernel_w) +
               1.0 * (rc->stride_h == conv->stride_h && rc->stride_w == conv->stride_w);
    score += same_layer_affinity(task.workload, r.workload);
    if (score > best_score) {
      best_score = score;
      nearest = &r;
    }
  }
  if (!nearest) return std::nullopt;
  auto config = ss::transfer_config(space, nearest->space, nearest->config);
  if (!config) return std::nullopt;
  const std::string described = ss::describe_workload(task.workload);
  if (borrowed_.emplace(described, ss::describe_workload(nearest->workload)).second)
    logger("compiler")
        ->warn("no tuned record for {} {} in {}: borrowing the config of {} ({})",
               task.template_name, described, source_, ss::describe_workload(nearest->workload),
               space.describe(*config));
  return *config;
}

TunedConfigs::ChosenConfig TunedConfigs::config(const ss::Task& task,
                                                const ss::ConfigSpace& space) {
  const std::string workload = ss::describe_workload(task.workload);
  const std::string described = task.template_name + " " + workload;
  auto it = best_.find(ss::workload_key(task));
  if (it != best_.end()) {
    auto entity = records::entity_from_json(it->second);
    auto config = entity ? space.config_from_entity(*entity) : Expected<ss::Config>(entity.error());
    if (config && space.is_valid(*config)) return {*config, true, {}};
    // A record from elsewhere (AutoTVM has no register budget) whose register tile does not
    // fit ours: keep its blocks, shrink the tile.
    if (config) {
      if (auto fitted = ss::transfer_config(space, space, *config)) {
        if (warned_.insert(described).second)
          logger("compiler")
              ->warn("the record for {} ({}) exceeds the register budget; using {}", described,
                     space.describe(*config), space.describe(*fitted));
        return {*fitted, true, {}};
      }
    }
    if (warned_.insert(described).second)
      logger("compiler")
          ->warn(
              "the record for {} in {} is not a valid config of this template ({}); using "
              "the default",
              described, source_, config ? space.describe(*config) : config.error().message);
  }
  if (auto borrowed = borrow_for(task, space)) return {*borrowed, false, borrowed_.at(workload)};
  if (warned_.insert(described).second)
    logger("compiler")
        ->warn("no tuned record for {} in {}: using the default config", described, source_);
  if (std::find(fallbacks_.begin(), fallbacks_.end(), workload) == fallbacks_.end())
    fallbacks_.push_back(workload);
  return {ss::default_config(task, space), false, {}};
}

}  // namespace tensortune::driver
