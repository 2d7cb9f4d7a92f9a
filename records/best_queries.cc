// Best-record queries with filters (record_store.h: query_best): from the best-record tables
// where they can answer, else from a scan of the matching tasks' results.
#include <nlohmann/json.hpp>
#include <regex>

#include "records/detail/record_columns.h"
#include "records/detail/statement.h"
#include "records/record_store.h"
#include "records/schema.h"

namespace tensortune::records {
using detail::Statement;

namespace {

// Parameters: ?1 device key, ?2 threads, ?3 top k, ?4 template, ?5 workload-key LIKE pattern,
// ?6 workload keys (JSON array), ?7 whether ?6 applies, ?8 since, ?9 until, ?10 devices whose
// results do not count (JSON array; results scan only).
constexpr char kMatchingTasks[] =
    "m AS (SELECT id FROM tasks t WHERE (?4 = '' OR t.template = ?4 OR t.template LIKE ?4 || "
    "'.%') AND (?5 = '' OR t.workload_key LIKE ?5) AND (?7 = 0 OR t.workload_key IN (SELECT "
    "value FROM json_each(?6))))";

constexpr char kFromBestTables[] =
    "x AS (SELECT b.task_id, b.device_key, b.result_id, row_number() OVER (PARTITION BY "
    "b.task_id, b.device_key ORDER BY b.mean_cost, b.result_id) AS rank FROM top_results b WHERE "
    "b.task_id IN (SELECT id FROM m) AND (?1 = '' OR b.device_key = ?1) AND (?2 = 0 OR "
    "b.threads = ?2)), g AS (SELECT task_id, device_key, sum(measured) AS measured FROM "
    "best_groups WHERE task_id IN (SELECT id FROM m) AND (?1 = '' OR device_key = ?1) AND (?2 = "
    "0 OR threads = ?2) GROUP BY task_id, device_key)";

constexpr char kFromResults[] =
    "s AS (SELECT c.task_id, r.device_key, r.id AS result_id, r.error_no, r.mean_cost FROM "
    "results r JOIN configs c ON r.config_id = c.id WHERE c.task_id IN (SELECT id FROM m) AND (?1 "
    "= '' OR r.device_key = ?1) AND (?2 = 0 OR r.threads = ?2) AND r.timestamp >= ?8 AND (?9 = 0 "
    "OR r.timestamp <= ?9) AND (?10 = '[]' OR r.device NOT IN (SELECT value FROM "
    "json_each(?10)))), g AS (SELECT task_id, device_key, count(*) AS measured FROM s GROUP "
    "BY task_id, device_key), x AS (SELECT task_id, device_key, result_id, row_number() OVER "
    "(PARTITION BY task_id, device_key ORDER BY mean_cost, result_id) AS rank FROM s WHERE "
    "error_no = 0)";

}  // namespace

Expected<std::vector<BestRecord>> RecordStore::query_best(const BestQuery& f) {
  std::vector<BestRecord> out;
  TT_RETURN_IF_ERROR(query_best(f, [&](BestRecord&& b) { out.push_back(std::move(b)); }));
  return out;
}

Status RecordStore::query_best(const BestQuery& f, const std::function<void(BestRecord&&)>& each) {
  if (f.top_k < 1 || f.top_k > 1000)
    return invalid_argument("top_k = " + std::to_string(f.top_k) + ", must be in [1, 1000]");
  if (f.threads < 0)
    return invalid_argument("threads = " + std::to_string(f.threads) + ", must be >= 0");
  if (f.until != 0 && f.until < f.since)
    return invalid_argument("the time range ends before it starts (until < since)");
  std::string like;
  if (!f.shape.empty()) {
    static const std::regex shape("[0-9]+(x[0-9]+)*");
    if (!std::regex_match(f.shape, shape))
      return invalid_argument("shape = '" + f.shape + "': dimensions joined by x, e.g. 1x64x56x56");
    // Workload keys hold shapes as ["TENSOR", [1, 64, 56, 56], "float32"].
    std::string dims;
    for (char ch : f.shape) dims += ch == 'x' ? std::string(", ") : std::string(1, ch);
    like = "%[" + dims + "]%";
  }
  for (const auto& d : f.exclude_devices)
    if (d.empty()) return invalid_argument("exclude_devices: an empty device name");
  // The best-record tables keep the fastest results whoever measured them: excluding a device
  // needs the results themselves.
  const bool scan =
      f.since != 0 || f.until != 0 || f.top_k > kTopResults || !f.exclude_devices.empty();
  Statement q(db_.get(), std::string("WITH ") + kMatchingTasks + ", " +
                             (scan ? kFromResults : kFromBestTables) + " SELECT " +
                             detail::kRecordColumns +
                             ", g.measured FROM x JOIN g ON g.task_id = x.task_id AND "
                             "g.device_key = x.device_key JOIN results r ON r.id = x.result_id "
                             "JOIN configs c ON r.config_id = c.id JOIN tasks t ON c.task_id = "
                             "t.id WHERE x.rank <= ?3 ORDER BY t.id, x.device_key, x.rank");
  TT_RETURN_IF_ERROR(q.prepared());
  q.bind(1, f.device_key);
  q.bind(2, static_cast<int64_t>(f.threads));
  q.bind(3, static_cast<int64_t>(f.top_k));
  q.bind(4, f.template_name);
  q.bind(5, like);
  q.bind(6, nlohmann::json(f.workload_keys).dump());
  q.bind(7, static_cast<int64_t>(!f.workload_keys.empty()));
  q.bind(8, f.since);
  q.bind(9, f.until);
  q.bind(10, nlohmann::json(f.exclude_devices).dump());
  while (q.step()) {
    BestRecord b;
    b.record = detail::read_record(q);
    b.measured = q.int64(detail::kRecordColumnCount);
    b.gflops = b.record.task.flop / b.record.result.mean_cost() / 1e9;
    each(std::move(b));
  }
  return q.status();
}

Expected<std::vector<RecordStore::TopEntity>> RecordStore::top_entities(
    const std::string& template_name, const std::string& device_key) {
  // From the best-record tables: at most kTopResults rows a group, whatever the archive holds.
  Statement q(
      db_.get(),
      "SELECT t.workload_key, c.entity, b.mean_cost, b.threads FROM top_results b JOIN tasks t ON "
      "t.id = b.task_id JOIN results r ON r.id = b.result_id JOIN configs c ON c.id = "
      "r.config_id WHERE t.template = ?1 AND (?2 = '' OR b.device_key = ?2) ORDER BY "
      "b.result_id");
  TT_RETURN_IF_ERROR(q.prepared());
  q.bind(1, template_name);
  q.bind(2, device_key);
  std::vector<TopEntity> out;
  while (q.step()) out.push_back({q.text(0), q.text(1), q.real(2), static_cast<int>(q.int64(3))});
  TT_RETURN_IF_ERROR(q.status());
  return out;
}

}  // namespace tensortune::records
