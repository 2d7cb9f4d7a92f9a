#include "records/record_store.h"

#include <sqlite3.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "records/detail/entity_json.h"
#include "records/detail/record_columns.h"
#include "records/detail/statement.h"
#include "records/schema.h"
#include "records/schema_migration.h"

namespace tensortune::records {

namespace ss = schedule_space;
using detail::Statement;
using nlohmann::json;

TaskInfo task_info(const ss::Task& task, const ss::ConfigSpace& space) {
  return TaskInfo{ss::workload_key(task), task.template_name, task.target.spec, ss::task_flop(task),
                  space.size()};
}

std::string entity_to_json(const ss::Entity& entity) {
  // Written by hand: every stored result passes here, and a JSON DOM per call cost more than
  // the insert. Names are knob identifiers and annotations our own words, but both are escaped
  // through the JSON library all the same.
  std::string out = "[";
  char number[24];
  auto append_int = [&](int64_t v) {
    const auto end = std::to_chars(number, number + sizeof number, v).ptr;
    out.append(number, end);
  };
  for (size_t i = 0; i < entity.size(); ++i) {
    const auto& [name, value] = entity[i];
    if (i) out += ", ";
    out += '[';
    out += json(name).dump();
    if (const auto* sizes = std::get_if<std::vector<int64_t>>(&value)) {
      out += ", \"sp\", [";
      for (size_t k = 0; k < sizes->size(); ++k) {
        if (k) out += ", ";
        append_int((*sizes)[k]);
      }
      out += ']';
    } else if (const auto* v = std::get_if<int64_t>(&value)) {
      out += ", \"ot\", ";
      append_int(*v);
    } else if (const auto* b = std::get_if<bool>(&value)) {
      out += *b ? ", \"ot\", true" : ", \"ot\", false";
    } else {
      out += ", \"an\", ";
      out += json(std::get<std::string>(value)).dump();
    }
    out += ']';
  }
  out += ']';
  return out;
}

Expected<ss::Entity> entity_from_json(const std::string& text) {
  json list;
  try {
    list = json::parse(text);
  } catch (const json::exception& e) {
    return invalid_argument(std::string("entity is not JSON: ") + e.what());
  }
  return detail::entity_from_json_value(list);
}

Expected<ss::Entity> detail::entity_from_json_value(const json& list) {
  if (!list.is_array()) return invalid_argument("entity is not a list: " + list.dump());
  ss::Entity entity;
  for (const json& item : list) {
    if (!item.is_array() || item.size() != 3 || !item[0].is_string() || !item[1].is_string())
      return invalid_argument("entity item is not [name, kind, value]: " + item.dump());
    const std::string name = item[0].get<std::string>();
    const std::string kind = item[1].get<std::string>();
    const json& v = item[2];
    if (kind == "sp") {
      if (!v.is_array())
        return invalid_argument("entity " + name + ": split value is not a list: " + v.dump());
      std::vector<int64_t> sizes;
      for (const json& x : v) {
        if (!x.is_number_integer())
          return invalid_argument("entity " + name + ": split size " + x.dump() +
                                  " is not an integer");
        sizes.push_back(x.get<int64_t>());
      }
      entity.emplace_back(name, sizes);
    } else if (kind == "ot") {
      if (v.is_boolean())
        entity.emplace_back(name, v.get<bool>());
      else if (v.is_number_integer())
        entity.emplace_back(name, v.get<int64_t>());
      else
        return invalid_argument("entity " + name + ": value " + v.dump() +
                                " is not an integer or boolean");
    } else if (kind == "an") {
      if (!v.is_string())
        return invalid_argument("entity " + name + ": annotation " + v.dump() + " is not a string");
      entity.emplace_back(name, v.get<std::string>());
    } else {
      return invalid_argument("entity " + name + ": kind '" + kind + "' is not sp, ot or an");
    }
  }
  return entity;
}

void limit_sqlite_heap(int64_t bytes) { sqlite3_soft_heap_limit64(bytes); }

Expected<std::unique_ptr<RecordStore>> RecordStore::open(const std::string& path, Check check) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  DbHandle owned(raw);  // sqlite3_open_v2 may hand back a handle even when it fails
  if (rc != SQLITE_OK) {
    return unavailable("cannot open record DB " + path + ": " +
                       (raw ? sqlite3_errmsg(raw) : "out of memory"));
  }
  sqlite3* db = raw;
  std::unique_ptr<RecordStore> store(new RecordStore(std::move(owned), path));
  sqlite3_busy_timeout(db, 10000);
  // Reading the schema first fails with SQLITE_NOTADB on a file that is not a database,
  // before anything is written to it.
  {
    Statement probe(db, "SELECT count(*) FROM sqlite_master");
    if (!probe.prepared().has_value() || (probe.step(), !probe.status().has_value())) {
      return Error{ErrorCode::kDataLoss,
                   "record DB " + path + " is not a tensortune database: " + sqlite3_errmsg(db)};
    }
  }
  // A damaged file is refused before anything is written to it or answered from it (a best
  // query would leave out whole workloads and succeed).
  TT_RETURN_IF_ERROR(store->check_on_open(check));
  auto wal = store->exec("PRAGMA journal_mode=WAL");
  if (!wal) return wal.error().with_context("record DB " + path);
  TT_RETURN_IF_ERROR(store->exec("PRAGMA foreign_keys=ON"));
  TT_RETURN_IF_ERROR(store->exec("PRAGMA synchronous=NORMAL"));
  // SQLite's default page cache (2 MiB) spills to the WAL in the middle of a large transaction
  // once the results' indexes and the best-record tables outgrow it (in the sqlite3 shell,
  // 10^5 inserts through the trigger in one transaction: 2.0 s with the default, 1.2 s with
  // 64 MiB). Statement journals and a bulk insert's staging stay in memory as well.
  TT_RETURN_IF_ERROR(store->exec("PRAGMA cache_size=-65536"));
  TT_RETURN_IF_ERROR(store->exec("PRAGMA temp_store=MEMORY"));
  // Reads through a memory map of up to 4 GiB: a best-record query that visits thousands of
  // result rows scattered over a large archive reads them from the OS page cache without a
  // read() and a copy each.
  TT_RETURN_IF_ERROR(store->exec("PRAGMA mmap_size=4294967296"));
  // A DB from another program may have tables of the same names with other columns; the
  // version row tells us whether this is ours.
  {
    Statement has_meta(db, "SELECT name FROM sqlite_master WHERE type='table' AND name='meta'");
    TT_RETURN_IF_ERROR(has_meta.prepared());
    const bool meta = has_meta.step();
    Statement tables(db, "SELECT count(*) FROM sqlite_master WHERE type='table'");
    TT_RETURN_IF_ERROR(tables.prepared());
    tables.step();
    if (!meta && tables.int64(0) > 0)
      return Error{
          ErrorCode::kFailedPrecondition,
          "record DB " + path +
              " is a SQLite database of another program (no meta table); refusing to change it"};
    // A DB already at this version, trigger in place, needs nothing written: opening it takes
    // no write lock, so readers never queue behind a busy writer (the tracker's archive).
    if (meta) {
      Statement current(db,
                        "SELECT (SELECT value FROM meta WHERE key = 'schema_version') = ?1 AND "
                        "EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = "
                        "'results_keep_best')");
      TT_RETURN_IF_ERROR(current.prepared());
      current.bind(1, std::to_string(kSchemaVersion));
      if (current.step() && current.int64(0) == 1) return store;
    }
  }
  TT_RETURN_IF_ERROR(store->transaction([&]() -> Status {
    TT_RETURN_IF_ERROR(store->exec(kSchemaSql));
    Statement get(db, "SELECT value FROM meta WHERE key='schema_version'");
    TT_RETURN_IF_ERROR(get.prepared());
    if (get.step()) {
      const std::string v = get.text(0);
      if (v == "1") TT_RETURN_IF_ERROR(detail::migrate_v1_to_v2(db, path));
      if (v == "1" || v == "2") TT_RETURN_IF_ERROR(detail::migrate_v2_to_v3(db, path));
      if (v == "1" || v == "2" || v == "3") TT_RETURN_IF_ERROR(detail::migrate_v3_to_v4(db, path));
      if (v == "1" || v == "2" || v == "3" || v == "4")
        TT_RETURN_IF_ERROR(detail::migrate_v4_to_v5(db, path));
      else if (v != std::to_string(kSchemaVersion))
        return Error{ErrorCode::kFailedPrecondition, "record DB " + path + " has schema version " +
                                                         v + ", this tensortune reads version " +
                                                         std::to_string(kSchemaVersion)};
    } else {
      Statement put(db, "INSERT INTO meta(key, value) VALUES ('schema_version', ?)");
      TT_RETURN_IF_ERROR(put.prepared());
      put.bind(1, std::to_string(kSchemaVersion));
      TT_RETURN_IF_ERROR(put.run());
    }
    return store->exec(kBestTriggerSql);
  }));
  return store;
}

void RecordStore::CloseDb::operator()(sqlite3* db) const { sqlite3_close(db); }

RecordStore::RecordStore(DbHandle db, std::string path)
    : db_(std::move(db)), path_(std::move(path)) {}
RecordStore::~RecordStore() = default;

Status RecordStore::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return Error{rc == SQLITE_NOTADB ? ErrorCode::kDataLoss : ErrorCode::kUnavailable,
                 "sqlite: " + msg};
  }
  return ok_status();
}

Status RecordStore::transaction(const std::function<Status()>& fn) {
  if (transaction_depth_ > 0) return fn();
  TT_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
  ++transaction_depth_;
  Status st = fn();
  --transaction_depth_;
  if (!st.has_value()) {
    (void)exec("ROLLBACK");
    return st;
  }
  Status commit = exec("COMMIT");
  if (!commit.has_value()) (void)exec("ROLLBACK");
  return commit;
}

Status RecordStore::bulk_insert(const std::function<Status()>& fn) {
  if (in_bulk_insert_) return fn();
  // Foreign keys are checked row by row, a B-tree probe per result; the flush joins each result
  // to its config, so none can dangle. The pragma only takes effect outside a transaction.
  const bool own_transaction = transaction_depth_ == 0;
  if (own_transaction) TT_RETURN_IF_ERROR(exec("PRAGMA foreign_keys=OFF"));
  Status st = bulk_insert_in_transaction(fn);
  if (own_transaction) {
    Status fk = exec("PRAGMA foreign_keys=ON");
    if (st.has_value()) return fk;
  }
  return st;
}

Status RecordStore::bulk_insert_in_transaction(const std::function<Status()>& fn) {
  return transaction([&]() -> Status {
    // The transaction holds the write lock: nobody else inserts before the trigger is back.
    TT_RETURN_IF_ERROR(exec("DROP TRIGGER results_keep_best"));
    TT_RETURN_IF_ERROR(exec(kBulkStageSql));
    in_bulk_insert_ = true;
    staged_rows_ = 0;
    Status st = fn();
    in_bulk_insert_ = false;
    if (st.has_value() && staged_rows_ > 0) st = flush_staged_rows();
    stage_result_.reset();  // it names a temp table dropped below
    TT_RETURN_IF_ERROR(st);
    TT_RETURN_IF_ERROR(exec("DROP TABLE bulk_rows"));
    return exec(kBestTriggerSql);
  });
}

Status RecordStore::flush_staged_rows() {
  // Results' ids only grow (INTEGER PRIMARY KEY: max + 1), and every staged row becomes one
  // result (its config exists: the flush inserts configs first), in rowid order, so staged row k
  // is result before + k. The count is checked, not assumed.
  const auto max_result_id = [&]() -> int64_t {
    Statement last(db_.get(), "SELECT coalesce(max(id), 0) FROM results");
    return last.step() ? last.int64(0) : -1;
  };
  const int64_t before = max_result_id();
  TT_RETURN_IF_ERROR(exec(kBulkFlushSql));
  const int64_t written = max_result_id() - before;
  {
    Statement top(db_.get(), "SELECT count(*), coalesce(max(rowid), 0) FROM bulk_rows");
    TT_RETURN_IF_ERROR(top.prepared());
    top.step();
    if (before < 0 || written != staged_rows_ || top.int64(0) != staged_rows_ ||
        top.int64(1) != staged_rows_)
      return internal_error("bulk insert: " + std::to_string(staged_rows_) + " rows staged but " +
                            std::to_string(written) + " results written");
  }  // finalized: a statement still open on the temp tables would block the merge's DROPs
  {
    Statement fresh(db_.get(),
                    "CREATE TEMP TABLE bulk_fresh AS SELECT task_id, device_key, threads, "
                    "mean_cost, ? + rowid AS id, error_no FROM bulk_rows");
    TT_RETURN_IF_ERROR(fresh.prepared());
    fresh.bind(1, before);
    TT_RETURN_IF_ERROR(fresh.run());
  }
  // The chunk's groups are merged now, not at the end: the merge of a chunk sorts its rows and
  // the groups' kept best, and a reader thread keeps preparing rows meanwhile.
  TT_RETURN_IF_ERROR(exec(kMergeBulkSql));
  // Emptied, the table numbers its rows from 1 again.
  TT_RETURN_IF_ERROR(exec("DELETE FROM bulk_rows"));
  staged_rows_ = 0;
  return ok_status();
}

Expected<int64_t> RecordStore::ensure_task(const TaskInfo& t) {
  int64_t id = -1;
  TT_RETURN_IF_ERROR(transaction([&]() -> Status {
    Statement ins(db_.get(),
                  "INSERT OR IGNORE INTO tasks(workload_key, template, target, flop, space_size) "
                  "VALUES (?, ?, ?, ?, ?)");
    TT_RETURN_IF_ERROR(ins.prepared());
    ins.bind(1, t.workload_key);
    ins.bind(2, t.template_name);
    ins.bind(3, t.target);
    ins.bind(4, t.flop);
    ins.bind(5, t.space_size);
    TT_RETURN_IF_ERROR(ins.run());
    Statement get(db_.get(), "SELECT id FROM tasks WHERE workload_key = ? AND target = ?");
    TT_RETURN_IF_ERROR(get.prepared());
    get.bind(1, t.workload_key);
    get.bind(2, t.target);
    if (!get.step()) return internal_error("task row vanished after insert");
    id = get.int64(0);
    return ok_status();
  }));
  return id;
}

namespace {

std::string costs_to_json(const std::vector<double>& costs) {
  std::string out = "[";
  for (size_t i = 0; i < costs.size(); ++i) {
    char number[32];
    if (i) out += ", ";
    // Shortest text that reads back as the same double, as the JSON library writes it.
    out.append(number, std::to_chars(number, number + sizeof number, costs[i]).ptr);
  }
  out += ']';
  return out;
}

}  // namespace

Status RecordStore::prepare_cached(std::unique_ptr<Statement>& cached, const char* sql) {
  if (!cached) {
    auto s = std::make_unique<Statement>(db_.get(), sql);
    TT_RETURN_IF_ERROR(s->prepared());
    cached = std::move(s);
  }
  cached->reset();
  return ok_status();
}

namespace {

// The 13 result columns that the staging and the direct insert share, in their common order
// (device_key ... trial), bound from parameter `first` on.
void bind_result_columns(Statement& q, int first, const ss::MeasureResult& r, const RunInfo& run,
                         int64_t trial) {
  int i = first;
  q.bind(i++, r.device_key);
  q.bind(i++, costs_to_json(r.costs));
  q.bind(i++, r.ok() ? r.mean_cost() : ss::kErrorCost);
  q.bind(i++, static_cast<int64_t>(r.error_no));
  q.bind(i++, r.error_msg);
  q.bind(i++, r.all_cost_s);
  q.bind(i++, r.compile_s);
  q.bind(i++, r.timestamp);
  q.bind(i++, static_cast<int64_t>(r.threads));
  q.bind(i++, r.number);
  q.bind(i++, run.tuner);
  q.bind(i++, run.run_id);
  q.bind(i++, trial);
}

}  // namespace

Status RecordStore::stage_result(int64_t task_id, int64_t config_index,
                                 const std::string& entity_json, const ss::MeasureResult& r,
                                 const RunInfo& run, int64_t trial) {
  TT_RETURN_IF_ERROR(prepare_cached(
      stage_result_,
      "INSERT INTO bulk_rows(task_id, config_index, entity, device_key, costs, mean_cost, "
      "error_no, error_msg, all_cost, compile_s, timestamp, threads, number, tuner, run_id, "
      "trial) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  Statement& q = *stage_result_;
  q.bind(1, task_id);
  q.bind(2, config_index);
  q.bind(3, entity_json);
  bind_result_columns(q, 4, r, run, trial);
  TT_RETURN_IF_ERROR(q.run());
  // Written in chunks: the staging table stays small, and a caller that prepares rows on
  // another thread (records import) keeps preparing while a chunk is written.
  if (++staged_rows_ >= kStagedRowsPerFlush) return flush_staged_rows();
  return ok_status();
}

Status RecordStore::insert_result(int64_t task_id, int64_t config_index,
                                  const std::string& entity_json, const ss::MeasureResult& r,
                                  const RunInfo& run, int64_t trial) {
  if (in_bulk_insert_) return stage_result(task_id, config_index, entity_json, r, run, trial);
  TT_RETURN_IF_ERROR(prepare_cached(
      insert_config_,
      "INSERT OR IGNORE INTO configs(task_id, config_index, entity) VALUES (?, ?, ?)"));
  Statement& cfg = *insert_config_;
  cfg.bind(1, task_id);
  cfg.bind(2, config_index);
  cfg.bind(3, entity_json);
  TT_RETURN_IF_ERROR(cfg.run());
  TT_RETURN_IF_ERROR(
      prepare_cached(insert_result_,
                     "INSERT INTO results(device_key, costs, mean_cost, error_no, error_msg, "
                     "all_cost, compile_s, timestamp, threads, number, tuner, run_id, trial, "
                     "client, device, config_id) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                     "?16, ?17, id FROM configs WHERE task_id = ?14 AND config_index = ?15"));
  Statement& ins = *insert_result_;
  bind_result_columns(ins, 1, r, run, trial);
  ins.bind(14, task_id);
  ins.bind(15, config_index);
  ins.bind(16, run.client);
  ins.bind(17, run.device);
  return ins.run();
}

Status RecordStore::add_encoded_result(int64_t task_id, int64_t config_index,
                                       const std::string& entity_json, const ss::MeasureResult& r,
                                       const RunInfo& run, int64_t trial) {
  return transaction(
      [&] { return insert_result(task_id, config_index, entity_json, r, run, trial); });
}

Status RecordStore::add_results(int64_t task_id, const ss::ConfigSpace& space,
                                const std::vector<ss::Config>& configs,
                                const std::vector<ss::MeasureResult>& results, const RunInfo& run,
                                const std::vector<int64_t>& trials) {
  if (configs.size() != results.size())
    return internal_error("add_results: " + std::to_string(configs.size()) + " configs but " +
                          std::to_string(results.size()) + " results");
  return transaction([&]() -> Status {
    for (size_t i = 0; i < configs.size(); ++i)
      TT_RETURN_IF_ERROR(insert_result(task_id, configs[i].index,
                                       entity_to_json(space.entity_of(configs[i])), results[i], run,
                                       i < trials.size() ? trials[i] : -1));
    return ok_status();
  });
}

Expected<std::set<int64_t>> RecordStore::measured_indices(int64_t task_id,
                                                          const std::string& device_key,
                                                          int threads) {
  Statement q(db_.get(),
              "SELECT DISTINCT c.config_index FROM results r JOIN configs c ON r.config_id = c.id "
              "WHERE c.task_id = ?1 AND r.device_key = ?2 AND (?3 = 0 OR r.threads = ?3)");
  TT_RETURN_IF_ERROR(q.prepared());
  q.bind(1, task_id);
  q.bind(2, device_key);
  q.bind(3, static_cast<int64_t>(threads));
  std::set<int64_t> out;
  while (q.step()) out.insert(q.int64(0));
  TT_RETURN_IF_ERROR(q.status());
  return out;
}

namespace detail {

StoredRecord read_record(const Statement& q) {
  StoredRecord s;
  s.task = TaskInfo{q.text(0), q.text(1), q.text(2), q.real(3), q.int64(4)};
  s.config_index = q.int64(5);
  s.entity_json = q.text(6);
  s.result.config_index = s.config_index;
  s.result.device_key = q.text(7);
  try {
    s.result.costs = json::parse(q.text(8)).get<std::vector<double>>();
  } catch (const json::exception&) {
    s.result.costs = {ss::kErrorCost};
  }
  s.result.error_no = static_cast<ss::MeasureErrorNo>(q.int64(9));
  s.result.error_msg = q.text(10);
  s.result.all_cost_s = q.real(11);
  s.result.compile_s = q.real(12);
  s.result.timestamp = q.real(13);
  s.result.threads = static_cast<int>(q.int64(14));
  s.result.number = q.int64(15);
  s.tuner = q.text(16);
  s.run_id = q.text(17);
  s.trial = q.int64(18);
  s.client = q.text(19);
  s.device = q.text(20);
  return s;
}

}  // namespace detail

using detail::kRecordColumns;
using detail::read_record;

Expected<std::optional<BestRecord>> RecordStore::best(const std::string& workload_key,
                                                      const std::string& target,
                                                      const std::string& device_key, int threads) {
  // top_results holds each group's fastest: a few rows read, whatever the DB's size.
  Statement q(db_.get(),
              std::string("SELECT ") + kRecordColumns +
                  " FROM tasks t JOIN top_results b ON b.task_id = t.id JOIN results r ON r.id = "
                  "b.result_id JOIN configs c ON r.config_id = c.id WHERE t.workload_key = ?1 AND "
                  "(?2 = '' OR t.target = ?2) AND b.device_key = ?3 AND (?4 = 0 OR b.threads = "
                  "?4) ORDER BY b.mean_cost ASC, b.result_id ASC LIMIT 1");
  TT_RETURN_IF_ERROR(q.prepared());
  q.bind(1, workload_key);
  q.bind(2, target);
  q.bind(3, device_key);
  q.bind(4, static_cast<int64_t>(threads));
  if (!q.step()) {
    TT_RETURN_IF_ERROR(q.status());
    return std::optional<BestRecord>();
  }
  BestRecord b;
  b.record = read_record(q);
  b.gflops = b.record.task.flop / b.record.result.mean_cost() / 1e9;
  return std::optional<BestRecord>(std::move(b));
}

Expected<std::vector<BestRecord>> RecordStore::best_all() {
  // Per (task, device key): the fastest of its top_results over thread counts, or, for a group
  // whose every result failed, one of its (error) results; the count from best_groups.
  Statement q(
      db_.get(),
      std::string("SELECT ") + kRecordColumns +
          ", 0, g.measured FROM (SELECT task_id, device_key, sum(measured) AS measured, "
          "coalesce((SELECT b.result_id FROM top_results b WHERE b.task_id = bg.task_id AND "
          "b.device_key = bg.device_key ORDER BY b.mean_cost, b.result_id LIMIT 1), (SELECT "
          "r2.id FROM results r2 JOIN configs c2 ON r2.config_id = c2.id WHERE c2.task_id = "
          "bg.task_id AND r2.device_key = bg.device_key LIMIT 1)) AS result_id FROM best_groups "
          "bg GROUP BY task_id, device_key) g JOIN results r ON r.id = g.result_id JOIN configs "
          "c ON r.config_id = c.id JOIN tasks t ON c.task_id = t.id ORDER BY t.id, r.device_key");
  TT_RETURN_IF_ERROR(q.prepared());
  std::vector<BestRecord> out;
  while (q.step()) {
    BestRecord b;
    b.record = read_record(q);
    b.measured = q.int64(detail::kRecordColumnCount + 1);
    b.gflops = b.record.result.ok() ? b.record.task.flop / b.record.result.mean_cost() / 1e9 : 0;
    out.push_back(std::move(b));
  }
  TT_RETURN_IF_ERROR(q.status());
  return out;
}

Expected<std::vector<StoredRecord>> RecordStore::all_records() {
  Statement q(db_.get(), std::string("SELECT ") + kRecordColumns +
                             " FROM results r JOIN configs c ON r.config_id = c.id JOIN tasks t ON "
                             "c.task_id = t.id ORDER BY r.id");
  TT_RETURN_IF_ERROR(q.prepared());
  std::vector<StoredRecord> out;
  while (q.step()) out.push_back(read_record(q));
  TT_RETURN_IF_ERROR(q.status());
  return out;
}

Expected<std::vector<StoredRecord>> RecordStore::task_records(int64_t task_id,
                                                              const std::string& device_key,
                                                              int threads) {
  Statement q(
      db_.get(),
      std::string("SELECT ") + kRecordColumns +
          " FROM results r JOIN configs c ON r.config_id = c.id JOIN tasks t ON c.task_id = t.id "
          "WHERE t.id = ?1 AND r.device_key = ?2 AND (?3 = 0 OR r.threads = ?3) ORDER BY r.id");
  TT_RETURN_IF_ERROR(q.prepared());
  q.bind(1, task_id);
  q.bind(2, device_key);
  q.bind(3, static_cast<int64_t>(threads));
  std::vector<StoredRecord> out;
  while (q.step()) out.push_back(read_record(q));
  TT_RETURN_IF_ERROR(q.status());
  return out;
}

Expected<int64_t> RecordStore::result_count() {
  Statement q(db_.get(), "SELECT count(*) FROM results");
  TT_RETURN_IF_ERROR(q.prepared());
  q.step();
  TT_RETURN_IF_ERROR(q.status());
  return q.int64(0);
}

}  // namespace tensortune::records
