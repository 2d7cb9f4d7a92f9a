// `tensortune records best`: the best records of a DB or a tracker's archive, filtered in SQL
// over the best-record tables.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "cli/records_commands.h"
#include "compiler/codegen/llvm/kernel.h"
#include "proto/rpc_channel.h"
#include "records/autotvm_log.h"
#include "tracker/tracker_client.h"
#include "tuner/task_extraction.h"
#include "workflow/best_query.h"

namespace tensortune::cli {

namespace {

// A damaged entity in the DB shows as its text, not as an exception.
nlohmann::json entity_or_text(const std::string& text) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? nlohmann::json(text) : parsed;
}

bool is_filtered(const records::RecordStore::BestQuery& q) {
  return !q.template_name.empty() || !q.shape.empty() || !q.workload_keys.empty() ||
         !q.device_key.empty() || q.threads != 0 || q.since != 0 || q.until != 0 || q.top_k > 1 ||
         !q.exclude_devices.empty();
}

// The tracker archive's best records, in the record store's shape.
Expected<std::vector<records::BestRecord>> tracker_best(const RecordsFlags& f,
                                                        const records::RecordStore::BestQuery& q) {
  TT_ASSIGN_OR_RETURN(
      auto e, wire::tracker_endpoint(f.tracker, f.token_file, f.tls_ca, f.tls_cert, f.tls_key));
  TT_ASSIGN_OR_RETURN(auto client, tracker::TrackerClient::connect(e));
  v1::BestRecordsRequest req;
  req.set_device_key(q.device_key);
  req.set_template_name(q.template_name);
  req.set_shape(q.shape);
  for (const auto& k : q.workload_keys) req.add_workload_keys(k);
  req.set_threads(q.threads);
  req.set_since(q.since);
  req.set_until(q.until);
  req.set_top_k(q.top_k);
  for (const auto& d : q.exclude_devices) req.add_exclude_devices(d);
  TT_ASSIGN_OR_RETURN(auto reply, client->best_records(req));
  std::vector<records::BestRecord> out;
  for (const auto& r : reply.records()) {
    records::BestRecord b;
    b.record.task.workload_key = r.workload_key();
    b.record.task.template_name = r.template_name();
    b.record.task.target = r.target();
    b.record.config_index = r.config_index();
    b.record.entity_json = r.entity_json();
    b.record.result.device_key = r.device_key();
    b.record.result.costs = {r.mean_cost_s()};
    b.record.result.threads = r.threads();
    b.record.device = r.device();
    b.record.client = r.client();
    b.gflops = r.gflops();
    b.measured = r.measured();
    out.push_back(std::move(b));
  }
  return out;
}

nlohmann::json best_json(const records::BestRecord& b) {
  const auto& r = b.record;
  nlohmann::json j = {{"workload_key", r.task.workload_key},
                      {"template", r.task.template_name},
                      {"target", r.task.target},
                      {"device_key", r.result.device_key},
                      {"ok", r.result.ok()},
                      {"gflops", b.gflops},
                      {"mean_cost_s", r.result.ok() ? nlohmann::json(r.result.mean_cost())
                                                    : nlohmann::json(nullptr)},
                      {"config_index", r.config_index},
                      {"entity", entity_or_text(r.entity_json)},
                      {"threads", r.result.threads},
                      {"measured", b.measured}};
  // Farm results say who measured them and whose job it was.
  if (!r.device.empty()) j["device"] = r.device;
  if (!r.client.empty()) j["client"] = r.client;
  return j;
}

}  // namespace

Status run_best(const RecordsFlags& f) {
  TT_ASSIGN_OR_RETURN(const auto query, workflow::best_query(f));
  const bool filtered = is_filtered(query);
  std::vector<records::BestRecord> best;
  if (!f.tracker.empty()) {
    TT_ASSIGN_OR_RETURN(best, tracker_best(f, query));
  } else {
    if (!std::filesystem::exists(f.db)) return not_found("--db " + f.db + " does not exist");
    TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
    // Unfiltered, every group is listed, those whose every result failed too.
    if (filtered && f.json_lines) {
      // Written while the query runs: a large answer (--top-k, a time range over a big
      // archive) is never held whole.
      int64_t written = 0;
      TT_RETURN_IF_ERROR(store->query_best(query, [&](records::BestRecord&& b) {
        std::printf("%s\n", best_json(b).dump().c_str());
        ++written;
      }));
      if (written == 0) std::fprintf(stderr, "no record in %s matches the filters\n", f.db.c_str());
      return ok_status();
    }
    if (filtered) {
      TT_ASSIGN_OR_RETURN(best, store->query_best(query));
    } else {
      TT_ASSIGN_OR_RETURN(best, store->best_all());
    }
  }
  if (best.empty() && filtered)
    std::fprintf(stderr, "no record in %s matches the filters\n",
                 f.tracker.empty() ? f.db.c_str() : f.tracker.c_str());
  if (f.json_lines) {
    // One object a line (a filtered local query streams above).
    for (const auto& b : best) std::printf("%s\n", best_json(b).dump().c_str());
    return ok_status();
  }
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& b : best) out.push_back(best_json(b));
    std::printf("%s\n", out.dump(2).c_str());
    return ok_status();
  }
  if (best.empty()) {
    if (!filtered)
      std::printf("%s has no records yet\n", f.tracker.empty() ? f.db.c_str() : f.tracker.c_str());
    return ok_status();
  }
  std::printf("%-17s %-50s %-11s %9s %9s %7s  %s\n", "template", "workload", "device", "GFLOPS",
              "mean ms", "trials", "best config");
  // A task's space is built once, however many device keys and thread counts list it (an
  // archive lists each workload under several).
  std::map<std::string, std::optional<schedule_space::ConfigSpace>> spaces;
  auto space_of =
      [&](const records::TaskInfo& t) -> const std::optional<schedule_space::ConfigSpace>& {
    auto [it, added] = spaces.try_emplace(t.workload_key + "\n" + t.target);
    if (added)
      if (auto task = records::task_from_workload_key(t.workload_key, t.target, 16))
        if (auto space = schedule_space::make_config_space(*task)) it->second = std::move(*space);
    return it->second;
  };
  for (const auto& b : best) {
    const auto& r = b.record;
    const std::string workload = workflow::described_workload(r);
    std::string config = "-";
    if (r.result.ok()) {
      const auto& space = space_of(r.task);
      auto entity = records::entity_from_json(r.entity_json);
      if (space && entity) {
        auto c = space->config_from_entity(*entity);
        config = c ? space->describe(*c) : r.entity_json;
      }
    }
    if (r.result.ok()) {
      std::printf("%-17s %-50s %-11s %9.2f %9.4f %7lld  %s\n", r.task.template_name.c_str(),
                  workload.c_str(), r.result.device_key.c_str(), b.gflops,
                  r.result.mean_cost() * 1e3, static_cast<long long>(b.measured), config.c_str());
    } else {
      std::printf("%-17s %-50s %-11s %9s %9s %7lld  %s\n", r.task.template_name.c_str(),
                  workload.c_str(), r.result.device_key.c_str(), "-", "all fail",
                  static_cast<long long>(b.measured), "-");
    }
  }
  return ok_status();
}

}  // namespace tensortune::cli
