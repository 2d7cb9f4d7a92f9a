// The record store's maintenance queries (record_store.h): what the DB holds, and the
// best-record tables checked against (or rebuilt from) a full scan.
#include <sqlite3.h>

#include <functional>

#include "records/detail/statement.h"
#include "records/record_store.h"
#include "records/schema.h"

namespace tensortune::records {
using detail::Statement;

Expected<RecordStore::Stats> RecordStore::stats() {
  Stats out;
  auto one_row = [&](const char* sql, const std::function<void(Statement&)>& read) -> Status {
    Statement q(db_.get(), sql);
    TT_RETURN_IF_ERROR(q.prepared());
    if (q.step()) read(q);
    return q.status();
  };
  auto rows = [&](const char* sql, std::vector<std::pair<std::string, int64_t>>* out_rows) {
    return one_row(sql, [&](Statement& q) {
      do out_rows->emplace_back(q.text(0), q.int64(1));
      while (q.step());
    });
  };
  TT_RETURN_IF_ERROR(
      one_row("SELECT count(*), coalesce(sum(error_no != 0), 0), coalesce(min(timestamp), 0), "
              "coalesce(max(timestamp), 0) FROM results",
              [&](Statement& q) {
                out.results = q.int64(0);
                out.failed = q.int64(1);
                out.oldest = q.real(2);
                out.newest = q.real(3);
              }));
  TT_RETURN_IF_ERROR(
      one_row("SELECT count(*) FROM tasks", [&](Statement& q) { out.tasks = q.int64(0); }));
  TT_RETURN_IF_ERROR(
      one_row("SELECT count(*) FROM configs", [&](Statement& q) { out.configs = q.int64(0); }));
  TT_RETURN_IF_ERROR(one_row("SELECT count(*) FROM layout_transforms",
                             [&](Statement& q) { out.transforms = q.int64(0); }));
  TT_RETURN_IF_ERROR(one_row("SELECT count(DISTINCT model) FROM graph_best",
                             [&](Statement& q) { out.graph_best_models = q.int64(0); }));
  TT_RETURN_IF_ERROR(
      rows("SELECT device_key, count(*) FROM results GROUP BY device_key ORDER BY device_key",
           &out.device_keys));
  TT_RETURN_IF_ERROR(rows(
      "SELECT template, count(*) FROM tasks GROUP BY template ORDER BY template", &out.templates));
  TT_RETURN_IF_ERROR(
      one_row("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
              [&](Statement& q) { out.bytes = q.int64(0); }));
  return out;
}

namespace {

// What best_groups and top_results must hold, from a full scan, as temporary tables.
constexpr char kExpectedBestSql[] = R"sql(
DROP TABLE IF EXISTS temp.expect_groups;
DROP TABLE IF EXISTS temp.expect_top;
CREATE TEMP TABLE expect_groups AS
  SELECT c.task_id AS task_id, r.device_key AS device_key, r.threads AS threads,
         count(*) AS measured
  FROM results r JOIN configs c ON r.config_id = c.id GROUP BY c.task_id, r.device_key, r.threads;
CREATE TEMP TABLE expect_top AS
  SELECT task_id, device_key, threads, mean_cost, id AS result_id FROM (
    SELECT c.task_id, r.device_key, r.threads, r.mean_cost, r.id, row_number() OVER (
      PARTITION BY c.task_id, r.device_key, r.threads ORDER BY r.mean_cost, r.id) AS rank
    FROM results r JOIN configs c ON r.config_id = c.id WHERE r.error_no = 0)
  WHERE rank <= 20;
)sql";

}  // namespace

Expected<RecordStore::BestCheck> RecordStore::check_best_tables() {
  BestCheck out;
  TT_RETURN_IF_ERROR(exec(kExpectedBestSql));
  {
    Statement q(db_.get(), "SELECT coalesce(sum(measured), 0), count(*) FROM temp.expect_groups");
    TT_RETURN_IF_ERROR(q.prepared());
    if (q.step()) {
      out.results = q.int64(0);
      out.groups = q.int64(1);
    }
    TT_RETURN_IF_ERROR(q.status());
  }
  const std::pair<const char*, const char*> diffs[] = {
      {"SELECT task_id, device_key, threads, measured FROM temp.expect_groups EXCEPT SELECT "
       "task_id, device_key, threads, measured FROM best_groups",
       "missing or wrong in best_groups"},
      {"SELECT task_id, device_key, threads, measured FROM best_groups EXCEPT SELECT task_id, "
       "device_key, threads, measured FROM temp.expect_groups",
       "in best_groups but not in the results"},
      {"SELECT task_id, device_key, threads, result_id FROM temp.expect_top EXCEPT SELECT "
       "task_id, device_key, threads, result_id FROM top_results",
       "missing from top_results"},
      {"SELECT task_id, device_key, threads, result_id FROM top_results EXCEPT SELECT task_id, "
       "device_key, threads, result_id FROM temp.expect_top",
       "in top_results but not among the group's fastest"},
  };
  for (const auto& [sql, what] : diffs) {
    Statement q(db_.get(), sql);
    TT_RETURN_IF_ERROR(q.prepared());
    while (q.step()) {
      ++out.mismatches;
      if (out.examples.size() < 10)
        out.examples.push_back("task " + std::to_string(q.int64(0)) + ", device key " + q.text(1) +
                               ", " + std::to_string(q.int64(2)) + " threads (" +
                               (std::string(what).starts_with("missing or wrong")
                                    ? std::to_string(q.int64(3)) + " results"
                                    : "result " + std::to_string(q.int64(3))) +
                               "): " + what);
    }
    TT_RETURN_IF_ERROR(q.status());
  }
  TT_RETURN_IF_ERROR(exec("DROP TABLE temp.expect_groups; DROP TABLE temp.expect_top;"));
  return out;
}

Status RecordStore::rebuild_best_tables() {
  return transaction([&] { return exec(kRebuildBestSql); });
}

Expected<RecordStore::CompactStats> RecordStore::compact(int keep_top, double keep_since) {
  if (keep_top < 1)
    return invalid_argument("keep_top = " + std::to_string(keep_top) + ", must be >= 1");
  CompactStats out;
  TT_ASSIGN_OR_RETURN(const Stats before, stats());
  out.before = before.results;
  out.bytes_before = before.bytes;
  TT_RETURN_IF_ERROR(transaction([&]() -> Status {
    Statement del(db_.get(),
                  "DELETE FROM results WHERE id IN (SELECT id FROM (SELECT r.id, r.timestamp, "
                  "r.error_no, row_number() OVER (PARTITION BY c.task_id, r.device_key ORDER BY "
                  "r.error_no != 0, r.mean_cost, r.id) AS rank FROM results r JOIN configs c ON "
                  "r.config_id = c.id) WHERE (rank > ? OR error_no != 0) AND timestamp < ?)");
    TT_RETURN_IF_ERROR(del.prepared());
    del.bind(1, static_cast<int64_t>(keep_top));
    del.bind(2, keep_since);
    TT_RETURN_IF_ERROR(del.run());
    out.deleted = sqlite3_changes64(db_.get());
    TT_RETURN_IF_ERROR(
        exec("DELETE FROM configs WHERE id NOT IN (SELECT DISTINCT config_id FROM results)"));
    return exec(kRebuildBestSql);
  }));
  TT_RETURN_IF_ERROR(exec("VACUUM"));
  TT_ASSIGN_OR_RETURN(const Stats after, stats());
  out.bytes_after = after.bytes;
  return out;
}

}  // namespace tensortune::records
