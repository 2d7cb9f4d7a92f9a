// `tensortune records stats|check|compact`: what a record DB holds, its best-record tables
// checked against a full scan, and compaction of long-lived archives.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/records_commands.h"

namespace tensortune::cli {
namespace {

std::string utc_date(double unix_seconds) {
  if (unix_seconds <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::gmtime(&t));
  return buf;
}

}  // namespace

Status run_stats(const RecordsFlags& f) {
  if (!std::filesystem::exists(f.db)) return not_found("--db " + f.db + " does not exist");
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  TT_ASSIGN_OR_RETURN(auto s, store->stats());
  if (f.json) {
    nlohmann::json j = {{"db", f.db},
                        {"results", s.results},
                        {"failed", s.failed},
                        {"tasks", s.tasks},
                        {"configs", s.configs},
                        {"oldest", s.oldest},
                        {"newest", s.newest},
                        {"layout_transforms", s.transforms},
                        {"graph_best_models", s.graph_best_models},
                        {"bytes", s.bytes}};
    for (const auto& [k, n] : s.device_keys) j["device_keys"][k] = n;
    for (const auto& [t, n] : s.templates) j["templates"][t] = n;
    std::printf("%s\n", j.dump(2).c_str());
    return ok_status();
  }
  std::printf("%s: %.1f MiB\n", f.db.c_str(), double(s.bytes) / (1 << 20));
  std::printf("  results      %lld (%lld failed)\n", static_cast<long long>(s.results),
              static_cast<long long>(s.failed));
  std::printf("  workloads    %lld tasks (workload, target), %lld distinct configs\n",
              static_cast<long long>(s.tasks), static_cast<long long>(s.configs));
  for (const auto& [t, n] : s.templates)
    std::printf("    %-24s %lld tasks\n", t.c_str(), static_cast<long long>(n));
  std::printf("  device keys  %zu\n", s.device_keys.size());
  for (const auto& [k, n] : s.device_keys)
    std::printf("    %-24s %lld results\n", k.c_str(), static_cast<long long>(n));
  std::printf("  measured     %s .. %s UTC\n", utc_date(s.oldest).c_str(),
              utc_date(s.newest).c_str());
  std::printf("  graph tuner  %lld layout-transform times, graph-best records of %lld models\n",
              static_cast<long long>(s.transforms), static_cast<long long>(s.graph_best_models));
  return ok_status();
}

Status run_check(const RecordsFlags& f, bool repair) {
  if (!std::filesystem::exists(f.db)) return not_found("--db " + f.db + " does not exist");
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  if (repair) TT_RETURN_IF_ERROR(store->rebuild_best_tables());
  TT_ASSIGN_OR_RETURN(auto check, store->check_best_tables());
  if (check.mismatches == 0) {
    std::printf(
        "%s: the best-record tables agree with a full scan (%lld results in %lld groups)%s\n",
        f.db.c_str(), static_cast<long long>(check.results), static_cast<long long>(check.groups),
        repair ? ", rebuilt" : "");
    return ok_status();
  }
  for (const std::string& e : check.examples) std::printf("  %s\n", e.c_str());
  return Error{ErrorCode::kDataLoss,
               f.db + ": " + std::to_string(check.mismatches) +
                   " differences between the best-record tables and a full scan (listed above); "
                   "`tensortune records check --repair` rebuilds them"};
}

Status run_compact(const RecordsFlags& f, int keep_top, const std::string& keep_since) {
  if (keep_top < 1)
    return invalid_argument(
        "records compact needs --keep-top K (the fastest results kept per workload, target and "
        "device key); nothing was changed");
  if (!std::filesystem::exists(f.db)) return not_found("--db " + f.db + " does not exist");
  TT_ASSIGN_OR_RETURN(const double since, workflow::parse_time("--keep-since", keep_since));
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  std::fprintf(stderr, "compacting %s (one transaction, then VACUUM) ...\n", f.db.c_str());
  TT_ASSIGN_OR_RETURN(auto c, store->compact(keep_top, since));
  std::printf(
      "%s: kept %lld of %lld results (the %d fastest per workload, target and device "
      "key%s), %.1f -> %.1f MiB\n",
      f.db.c_str(), static_cast<long long>(c.before - c.deleted), static_cast<long long>(c.before),
      keep_top, keep_since.empty() ? "" : (", and all since " + keep_since).c_str(),
      double(c.bytes_before) / (1 << 20), double(c.bytes_after) / (1 << 20));
  return ok_status();
}

}  // namespace tensortune::cli
