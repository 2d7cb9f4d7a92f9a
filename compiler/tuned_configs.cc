#include "compiler/tuned_configs.h"

#include <fstream>
#include <optional>

#include "records/autotvm_log.h"
#include "records/record_store.h"
#include "support/log.h"

namespace tensortune::compiler {

namespace ss = schedule_space;

Expected<TunedConfigs> TunedConfigs::load(const std::string& path, const std::string& device_key,
                                          int vector_lanes) {
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
    TT_ASSIGN_OR_RETURN(auto stats, records::import_autotvm_log(*store, log, path,
                                                                device_key.empty() ? "autotvm-log" : device_key,
                                                                vector_lanes));
    (void)stats;
  }
  TT_ASSIGN_OR_RETURN(auto best, store->best_all());
  TunedConfigs out;
  out.source_ = path;
  std::map<std::string, double> gflops;
  for (const auto& b : best) {
    if (!b.record.result.ok()) continue;
    if (sqlite && !device_key.empty() && b.record.result.device_key != device_key) continue;
    const std::string& key = b.record.task.workload_key;
    if (gflops.count(key) && gflops[key] >= b.gflops) continue;
    gflops[key] = b.gflops;
    out.best_[key] = b.record.entity_json;
  }
  TT_ASSIGN_OR_RETURN(auto records, store->all_records());
  for (const auto& r : records) {
    if (!r.result.ok() || r.result.costs.empty()) continue;
    if (sqlite && !device_key.empty() && r.result.device_key != device_key) continue;
    out.all_[r.task.workload_key].emplace_back(r.entity_json, r.result.mean_cost());
  }
  logger("compiler")->info("{} tuned workloads from {}", out.best_.size(), path);
  return out;
}

std::optional<ss::Conv2dSchedule> TunedConfigs::preferred_schedule(const std::string& key,
                                                                   const ss::Conv2dWorkload& w,
                                                                   const ss::ConfigSpace& space) const {
  auto it = all_.find(key);
  if (it == all_.end()) return std::nullopt;
  const int64_t b = preferred_block_;
  const bool ic_fits = w.in_channels % b == 0;
  std::optional<ss::Conv2dSchedule> best, preferred;
  double best_cost = 0, preferred_cost = 0;
  for (const auto& [entity_json, cost] : it->second) {
    auto entity = records::entity_from_json(entity_json);
    if (!entity) continue;
    auto config = space.config_from_entity(*entity);
    if (!config || !space.is_valid(*config)) continue;
    const ss::Conv2dSchedule s = ss::conv2d_nchwc_schedule(space, *config);
    if (!best || cost < best_cost) best = s, best_cost = cost;
    if (s.oc_bn == b && (s.ic_bn == b || !ic_fits) && (!preferred || cost < preferred_cost))
      preferred = s, preferred_cost = cost;
  }
  if (!best) return std::nullopt;
  // Mixed blocks cost about two layout transforms and an unfused residual add per layer:
  // each moves the layer's input or output once, read and written, at about 8 GB/s.
  const double bytes = 4.0 * double(w.batch) * (double(w.in_channels) * double(w.in_height) * double(w.in_width) +
                                                double(w.out_channels) * double(w.out_height()) * double(w.out_width()));
  const double mixed_penalty_s = 1.5 * bytes / 8e9;
  if (preferred && preferred_cost <= best_cost + mixed_penalty_s) return preferred;
  return best;
}

ss::Conv2dSchedule TunedConfigs::conv2d_schedule(const ss::Conv2dWorkload& w,
                                                 const ss::Target& target) {
  const ss::ConfigSpace space = ss::conv2d_nchwc_space(w, target.vector_lanes);
  auto task = ss::make_task(ss::kConv2dNCHWc, w, target);
  if (task) {
    const std::string key = ss::workload_key(*task);
    if (preferred_block_ > 0) {
      if (auto s = preferred_schedule(key, w, space)) return *s;
    }
    auto it = best_.find(key);
    if (it != best_.end()) {
      auto entity = records::entity_from_json(it->second);
      if (entity) {
        auto config = space.config_from_entity(*entity);
        if (config && space.is_valid(*config)) return ss::conv2d_nchwc_schedule(space, *config);
      }
      logger("compiler")->warn("the record for {} does not fit this template; using the default",
                               ss::describe_workload(w));
    }
  }
  const std::string described = ss::describe_workload(w);
  if (warned_.insert(described).second) {
    fallbacks_.push_back(described);
    logger("compiler")->warn("no tuned record for conv2d_NCHWc.x86 {} in {}: using the default config",
                             described, source_);
  }
  return ss::conv2d_nchwc_schedule(space, ss::conv2d_nchwc_default(space, w, target.vector_lanes));
}

}  // namespace tensortune::compiler
