#include "records/schema_migration.h"

#include <chrono>
#include <utility>
#include <vector>

#include "records/autotvm_log.h"
#include "records/detail/statement.h"
#include "records/record_store.h"
#include "records/schema.h"
#include "schedule_space/task.h"
#include "support/log.h"
#include "support/stopwatch.h"

namespace tensortune::records::detail {
namespace {

namespace ss = schedule_space;

bool has_multiway_split(const ss::ConfigSpace& space) {
  for (const ss::Knob& k : space.knobs())
    if (k.kind == ss::KnobKind::kSplit && !k.options.empty() &&
        std::get<std::vector<int64_t>>(k.options.front()).size() > 2)
      return true;
  return false;
}

}  // namespace

Status migrate_v1_to_v2(sqlite3* db, const std::string& path) {
  struct TaskRow {
    int64_t id;
    std::string workload_key, target;
  };
  std::vector<TaskRow> tasks;
  {
    Statement q(db, "SELECT id, workload_key, target FROM tasks");
    TT_RETURN_IF_ERROR(q.prepared());
    while (q.step()) tasks.push_back({q.int64(0), q.text(1), q.text(2)});
    TT_RETURN_IF_ERROR(q.status());
  }
  std::vector<std::pair<int64_t, int64_t>> moves;  // config id, new index
  int64_t skipped_tasks = 0, unfit = 0, tasks_changed = 0;
  for (const TaskRow& t : tasks) {
    // The knobs' candidate lists do not depend on the vector width; any width rebuilds them.
    auto task = task_from_workload_key(t.workload_key, t.target, 16);
    if (!task) {
      ++skipped_tasks;
      continue;
    }
    auto space = ss::make_config_space(*task);
    if (!space) {
      ++skipped_tasks;
      continue;
    }
    if (!has_multiway_split(*space)) continue;
    Statement q(db, "SELECT id, config_index, entity FROM configs WHERE task_id = ?");
    TT_RETURN_IF_ERROR(q.prepared());
    q.bind(1, t.id);
    const size_t before = moves.size();
    while (q.step()) {
      auto entity = entity_from_json(q.text(2));
      auto config =
          entity ? space->config_from_entity(*entity) : Expected<ss::Config>(entity.error());
      if (!config) {
        ++unfit;
        continue;
      }
      if (config->index != q.int64(1)) moves.emplace_back(q.int64(0), config->index);
    }
    TT_RETURN_IF_ERROR(q.status());
    if (moves.size() > before) ++tasks_changed;
  }
  // Two passes, so that indices that trade places never collide on UNIQUE(task_id, index).
  Statement park(db, "UPDATE configs SET config_index = -1 - id WHERE id = ?");
  TT_RETURN_IF_ERROR(park.prepared());
  for (const auto& [id, index] : moves) {
    park.reset();
    park.bind(1, id);
    TT_RETURN_IF_ERROR(park.run());
  }
  Statement place(db, "UPDATE configs SET config_index = ? WHERE id = ?");
  TT_RETURN_IF_ERROR(place.prepared());
  for (const auto& [id, index] : moves) {
    place.reset();
    place.bind(1, index);
    place.bind(2, id);
    TT_RETURN_IF_ERROR(place.run());
  }
  Statement version(db, "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
  TT_RETURN_IF_ERROR(version.prepared());
  TT_RETURN_IF_ERROR(version.run());
  logger("records")->info(
      "record DB {}: schema 1 -> 2: {} configs of {} tasks reindexed to AutoTVM's split order{}{}",
      path, moves.size(), tasks_changed,
      skipped_tasks ? ", " + std::to_string(skipped_tasks) + " tasks of unknown templates kept"
                    : std::string(),
      unfit ? ", " + std::to_string(unfit) + " entities that fit no config kept" : std::string());
  return ok_status();
}

Status migrate_v2_to_v3(sqlite3* db, const std::string& path) {
  const Stopwatch start;
  logger("records")->info("record DB {}: schema 2 -> 3: building the best-record tables ...", path);
  char* err = nullptr;
  if (sqlite3_exec(db, kRebuildBestSql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string message = err ? err : "unknown error";
    sqlite3_free(err);
    return Error{ErrorCode::kUnavailable, "record DB " + path + ": schema 2 -> 3: " + message};
  }
  Statement version(db, "UPDATE meta SET value = '3' WHERE key = 'schema_version'");
  TT_RETURN_IF_ERROR(version.prepared());
  TT_RETURN_IF_ERROR(version.run());
  Statement count(db, "SELECT coalesce(sum(measured), 0), count(*) FROM best_groups");
  TT_RETURN_IF_ERROR(count.prepared());
  count.step();
  logger("records")->info("record DB {}: schema 2 -> 3: {} results in {} groups, {:.1f} s", path,
                          count.int64(0), count.int64(1), start.seconds());
  return ok_status();
}

Status migrate_v3_to_v4(sqlite3* db, const std::string& path) {
  char* err = nullptr;
  if (sqlite3_exec(db,
                   "DROP INDEX IF EXISTS configs_by_task; UPDATE meta SET value = '4' WHERE "
                   "key = 'schema_version'",
                   nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string message = err ? err : "unknown error";
    sqlite3_free(err);
    return Error{ErrorCode::kUnavailable, "record DB " + path + ": schema 3 -> 4: " + message};
  }
  logger("records")->info("record DB {}: schema 3 -> 4: index configs_by_task dropped", path);
  return ok_status();
}

Status migrate_v4_to_v5(sqlite3* db, const std::string& path) {
  // A DB whose version row was set back by hand (tests of older versions) has them already.
  bool present = false;
  {
    Statement has(db, "SELECT count(*) FROM pragma_table_info('results') WHERE name = 'device'");
    TT_RETURN_IF_ERROR(has.prepared());
    present = has.step() && has.int64(0) > 0;
  }
  const std::string add =
      present ? ""
              : "ALTER TABLE results ADD COLUMN client TEXT NOT NULL DEFAULT ''; ALTER TABLE "
                "results ADD COLUMN device TEXT NOT NULL DEFAULT ''; ";
  char* err = nullptr;
  if (sqlite3_exec(db, (add + "UPDATE meta SET value = '5' WHERE key = 'schema_version'").c_str(),
                   nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string message = err ? err : "unknown error";
    sqlite3_free(err);
    return Error{ErrorCode::kUnavailable, "record DB " + path + ": schema 4 -> 5: " + message};
  }
  logger("records")->info("record DB {}: schema 4 -> 5: results.client and results.device added",
                          path);
  return ok_status();
}

}  // namespace tensortune::records::detail
