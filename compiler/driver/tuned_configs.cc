#include "compiler/driver/tuned_configs.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "records/autotvm_log.h"
#include "records/record_store.h"
#include "schedule_space/config_transfer.h"
#include "support/log.h"

namespace tensortune::driver {

namespace ss = schedule_space;

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
  // Candidates per block pair come from the 20 fastest conv2d_NCHWc records of each group (the
  // best-record tables): their configs and costs only, whatever else a large archive holds.
  for (const char* name : {ss::kConv2dNCHWc, ss::kConv2dNCHWcWinograd}) {
    TT_ASSIGN_OR_RETURN(auto top, store->top_entities(name, sqlite ? device_key : ""));
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

std::vector<TunedConfigs::Candidate> TunedConfigs::decoded(const ss::Conv2dWorkload& w,
                                                           const ss::Target& target,
                                                           bool winograd) const {
  std::vector<Candidate> out;
  auto task = ss::make_task(winograd ? ss::kConv2dNCHWcWinograd : ss::kConv2dNCHWc, w, target);
  if (!task) return out;  // Winograd: a workload it does not serve
  auto it = all_.find(ss::workload_key(*task));
  if (it == all_.end()) return out;
  const ss::ConfigSpace space = winograd ? ss::conv2d_winograd_space(w, target.vector_lanes)
                                         : ss::conv2d_nchwc_space(w, target.vector_lanes);
  for (const auto& [entity_json, cost] : it->second) {
    auto entity = records::entity_from_json(entity_json);
    if (!entity) continue;
    auto config = space.config_from_entity(*entity);
    if (!config || !space.is_valid(*config)) continue;
    ss::Conv2dSchedule s;
    if (winograd) {
      const ss::WinogradSchedule ws = ss::conv2d_winograd_schedule(space, *config);
      s = ss::conv2d_nchwc_schedule_for_blocks(w, ws.ic_bn, ws.oc_bn, target.vector_lanes);
      s.winograd = ws;
    } else {
      s = ss::conv2d_nchwc_schedule(space, *config);
    }
    out.push_back(Candidate{s, cost, entity_json, it->first});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
  return out;
}

std::vector<TunedConfigs::Candidate> TunedConfigs::candidates(const ss::Conv2dWorkload& w,
                                                              const ss::Target& target) const {
  std::map<std::pair<int64_t, int64_t>, Candidate> by_blocks;
  for (const Candidate& c : decoded(w, target, false))
    by_blocks.try_emplace({c.schedule.ic_bn, c.schedule.oc_bn}, c);  // fastest first
  if (winograd_) {
    for (Candidate c : decoded(w, target, true)) {
      auto [pos, inserted] = by_blocks.try_emplace({c.schedule.ic_bn, c.schedule.oc_bn}, c);
      if (inserted || c.seconds >= pos->second.seconds) continue;
      // Keep the direct record's register tile as the Winograd node's fallback.
      if (!pos->second.schedule.winograd) {
        std::optional<ss::WinogradSchedule> ws = c.schedule.winograd;
        c.schedule = pos->second.schedule;
        c.schedule.winograd = ws;
      }
      pos->second = c;
    }
  }
  std::vector<Candidate> out;
  for (auto& [_, c] : by_blocks) out.push_back(c);
  std::sort(out.begin(), out.end(),
            [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
  return out;
}

std::optional<ss::Conv2dSchedule> TunedConfigs::faster_winograd(const ss::Conv2dWorkload& w,
                                                                const ss::Target& target) const {
  if (!winograd_) return std::nullopt;
  const std::vector<Candidate> winograd = decoded(w, target, true);
  if (winograd.empty()) return std::nullopt;
  const std::vector<Candidate> direct = decoded(w, target, false);
  if (!direct.empty() && direct.front().seconds <= winograd.front().seconds) return std::nullopt;
  ss::Conv2dSchedule s = winograd.front().schedule;
  for (const Candidate& d : direct)  // the fastest direct record with the same blocks, if any
    if (d.schedule.ic_bn == s.ic_bn && d.schedule.oc_bn == s.oc_bn) {
      s = d.schedule;
      s.winograd = winograd.front().schedule.winograd;
      break;
    }
  return s;
}

std::optional<ss::Conv2dSchedule> TunedConfigs::borrow_for(const ss::Conv2dWorkload& w,
                                                           const ss::ConfigSpace& space,
                                                           const ss::Target& target) {
  if (!borrow_) return std::nullopt;
  if (!references_built_) {
    references_built_ = true;
    for (const auto& [key, entity_json] : best_) {
      auto task = records::task_from_workload_key(key, target.spec, target.vector_lanes);
      if (!task || task->template_name != ss::kConv2dNCHWc) continue;
      auto entity = records::entity_from_json(entity_json);
      auto space = ss::make_config_space(*task);
      if (!entity || !space) continue;
      auto config = space->config_from_entity(*entity);
      if (!config) continue;
      references_.push_back(
          {std::get<ss::Conv2dWorkload>(task->workload), std::move(space).value(), *config});
    }
  }
  const Reference* nearest = nullptr;
  double best_score = 0;
  for (const Reference& r : references_) {
    // Same kernel and stride first (they shape the loop nest), then the divisor overlap.
    const double score =
        ss::transfer_affinity(space, r.space) +
        2.0 * (r.workload.kernel_h == w.kernel_h && r.workload.kernel_w == w.kernel_w) +
        1.0 * (r.workload.stride_h == w.stride_h && r.workload.stride_w == w.stride_w);
    if (score > best_score) {
      best_score = score;
      nearest = &r;
    }
  }
  if (!nearest) return std::nullopt;
  auto config = ss::transfer_config(space, nearest->space, nearest->config);
  if (!config) return std::nullopt;
  const std::string described = ss::describe_workload(w);
  if (borrowed_.emplace(described, ss::describe_workload(nearest->workload)).second)
    logger("compiler")
        ->warn("no tuned record for conv2d_NCHWc.x86 {} in {}: borrowing the config of {} ({})",
               described, source_, ss::describe_workload(nearest->workload),
               space.describe(*config));
  return ss::conv2d_nchwc_schedule(space, *config);
}

ss::Conv2dSchedule TunedConfigs::conv2d_schedule(const ss::Conv2dWorkload& w,
                                                 const ss::Target& target) {
  if (auto winograd = faster_winograd(w, target)) return *winograd;
  const ss::ConfigSpace space = ss::conv2d_nchwc_space(w, target.vector_lanes);
  auto task = ss::make_task(ss::kConv2dNCHWc, w, target);
  if (task) {
    auto it = best_.find(ss::workload_key(*task));
    if (it != best_.end()) {
      auto entity = records::entity_from_json(it->second);
      if (entity) {
        auto config = space.config_from_entity(*entity);
        if (config && space.is_valid(*config)) return ss::conv2d_nchwc_schedule(space, *config);
        // A record from elsewhere (AutoTVM has no register budget) whose register tile does
        // not fit ours: keep its blocks, shrink the tile.
        if (config) {
          if (auto fitted = ss::transfer_config(space, space, *config)) {
            if (warned_.insert(ss::describe_workload(w)).second)
              logger("compiler")
                  ->warn("the record for {} ({}) exceeds the register budget; using {}",
                         ss::describe_workload(w), space.describe(*config),
                         space.describe(*fitted));
            return ss::conv2d_nchwc_schedule(space, *fitted);
          }
        }
      }
      logger("compiler")
          ->warn("the record for {} does not fit this template; using the default",
                 ss::describe_workload(w));
    }
  }
  if (auto borrowed = borrow_for(w, space, target)) return *borrowed;
  const std::string described = ss::describe_workload(w);
  if (warned_.insert(described).second) {
    fallbacks_.push_back(described);
    logger("compiler")
        ->warn("no tuned record for conv2d_NCHWc.x86 {} in {}: using the default config", described,
               source_);
  }
  return ss::conv2d_nchwc_schedule(space, ss::conv2d_nchwc_default(space, w, target.vector_lanes));
}

TunedConfigs::ChosenConfig TunedConfigs::config(const ss::Task& task,
                                                const ss::ConfigSpace& space) {
  const std::string described = task.template_name + " " + ss::describe_workload(task.workload);
  auto it = best_.find(ss::workload_key(task));
  if (it != best_.end()) {
    auto entity = records::entity_from_json(it->second);
    auto config = entity ? space.config_from_entity(*entity) : Expected<ss::Config>(entity.error());
    if (config && space.is_valid(*config)) return {*config, true};
    if (warned_.insert(described).second)
      logger("compiler")
          ->warn(
              "the record for {} in {} is not a valid config of this template ({}); using "
              "the default",
              described, source_, config ? space.describe(*config) : config.error().message);
  }
  if (warned_.insert(described).second)
    logger("compiler")
        ->warn("no tuned record for {} in {}: using the default config", described, source_);
  if (std::find(fallbacks_.begin(), fallbacks_.end(), described) == fallbacks_.end())
    fallbacks_.push_back(described);
  return {ss::default_config(task, space), false};
}

}  // namespace tensortune::driver
