#include "compiler/tuned_configs.h"

#include <fstream>
#include <algorithm>

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

std::vector<TunedConfigs::Candidate> TunedConfigs::candidates(const ss::Conv2dWorkload& w,
                                                              const ss::Target& target) const {
  std::vector<Candidate> out;
  auto task = ss::make_task(ss::kConv2dNCHWc, w, target);
  if (!task) return out;
  auto it = all_.find(ss::workload_key(*task));
  if (it == all_.end()) return out;
  const ss::ConfigSpace space = ss::conv2d_nchwc_space(w, target.vector_lanes);
  std::map<std::pair<int64_t, int64_t>, Candidate> by_blocks;
  for (const auto& [entity_json, cost] : it->second) {
    auto entity = records::entity_from_json(entity_json);
    if (!entity) continue;
    auto config = space.config_from_entity(*entity);
    if (!config || !space.is_valid(*config)) continue;
    const ss::Conv2dSchedule s = ss::conv2d_nchwc_schedule(space, *config);
    auto [pos, inserted] = by_blocks.try_emplace({s.ic_bn, s.oc_bn}, Candidate{s, cost});
    if (!inserted && cost < pos->second.seconds) pos->second = Candidate{s, cost};
  }
  for (auto& [_, c] : by_blocks) out.push_back(c);
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
  return out;
}

ss::Conv2dSchedule TunedConfigs::conv2d_schedule(const ss::Conv2dWorkload& w,
                                                 const ss::Target& target) {
  const ss::ConfigSpace space = ss::conv2d_nchwc_space(w, target.vector_lanes);
  auto task = ss::make_task(ss::kConv2dNCHWc, w, target);
  if (task) {
    auto it = best_.find(ss::workload_key(*task));
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
