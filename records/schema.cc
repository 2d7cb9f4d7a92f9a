#include "records/schema.h"

namespace tensortune::records {

const char* const kRebuildBestSql = R"sql(
DELETE FROM best_groups;
DELETE FROM top_results;
INSERT INTO best_groups(task_id, device_key, threads, measured)
  SELECT c.task_id, r.device_key, r.threads, count(*) FROM results r
  JOIN configs c ON r.config_id = c.id GROUP BY c.task_id, r.device_key, r.threads;
INSERT INTO top_results(task_id, device_key, threads, mean_cost, result_id)
  SELECT task_id, device_key, threads, mean_cost, id FROM (
    SELECT c.task_id, r.device_key, r.threads, r.mean_cost, r.id, row_number() OVER (
      PARTITION BY c.task_id, r.device_key, r.threads ORDER BY r.mean_cost, r.id) AS rank
    FROM results r JOIN configs c ON r.config_id = c.id WHERE r.error_no = 0)
  WHERE rank <= 20;
)sql";

const char* const kSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tasks (
  id           INTEGER PRIMARY KEY,
  workload_key TEXT NOT NULL,       -- AutoTVM workload tuple as JSON
  template     TEXT NOT NULL,       -- the template's name (AutoTVM's task name)
  target       TEXT NOT NULL,       -- llvm -keys=cpu -mcpu=...
  flop         REAL NOT NULL,       -- floating-point operations of one run
  space_size   INTEGER NOT NULL,
  UNIQUE (workload_key, target)
);
CREATE TABLE IF NOT EXISTS configs (
  id           INTEGER PRIMARY KEY,
  task_id      INTEGER NOT NULL REFERENCES tasks(id),
  config_index INTEGER NOT NULL,
  entity       TEXT NOT NULL,       -- [["tile_ic", "sp", [-1, 16]], ...]
  UNIQUE (task_id, config_index)
);
CREATE TABLE IF NOT EXISTS results (
  id         INTEGER PRIMARY KEY,
  config_id  INTEGER NOT NULL REFERENCES configs(id),
  device_key TEXT NOT NULL,          -- x86-avx512, cuda-sm90, ...
  costs      TEXT NOT NULL,          -- JSON array, seconds per run, one per kept repeat
  mean_cost  REAL NOT NULL,          -- seconds; 1e9 on error
  error_no   INTEGER NOT NULL,       -- AutoTVM MeasureErrorNo
  error_msg  TEXT NOT NULL DEFAULT '',
  all_cost   REAL NOT NULL,          -- seconds of the whole measurement
  compile_s  REAL NOT NULL,
  timestamp  REAL NOT NULL,          -- unix seconds
  threads    INTEGER NOT NULL,
  number     INTEGER NOT NULL,       -- runs per repeat
  tuner      TEXT NOT NULL DEFAULT '',
  run_id     TEXT NOT NULL DEFAULT '',
  trial      INTEGER NOT NULL DEFAULT -1,
  client     TEXT NOT NULL DEFAULT '',  -- the farm credential whose job it was (issue 19)
  device     TEXT NOT NULL DEFAULT ''   -- the farm device that measured it ("box1/host:pid")
);
-- The graph tuner's tables (issue 13): measured layout-transform times, reused by later runs,
-- and each model's chosen record per conv node.
CREATE TABLE IF NOT EXISTS layout_transforms (
  device_key TEXT NOT NULL,
  shape      TEXT NOT NULL,          -- NCHW, "1x64x56x56"
  from_block INTEGER NOT NULL,       -- channel block of the source layout (1: NCHW)
  to_block   INTEGER NOT NULL,
  seconds    REAL NOT NULL,
  measured   INTEGER NOT NULL,       -- 0: an estimate (the transform could not be measured)
  PRIMARY KEY (device_key, shape, from_block, to_block)
);
CREATE TABLE IF NOT EXISTS graph_best (
  model        TEXT NOT NULL,        -- the model's fingerprint (graph_fingerprint)
  device_key   TEXT NOT NULL,
  node         TEXT NOT NULL,        -- the conv node's name
  workload_key TEXT NOT NULL,
  entity       TEXT NOT NULL,        -- the chosen record's config
  PRIMARY KEY (model, device_key, node)
);
-- The best results of every (task, device key, threads) group (issue 22), kept by the trigger
-- below in the same transaction as each result insert, whoever inserts (tuning runs, imports,
-- the tracker's archive), so best-record queries read at most 20 rows a group instead of
-- scanning every result. `records check` compares them with a full scan.
CREATE TABLE IF NOT EXISTS best_groups (
  task_id    INTEGER NOT NULL,
  device_key TEXT NOT NULL,
  threads    INTEGER NOT NULL,
  measured   INTEGER NOT NULL,       -- results of the group, errors included
  PRIMARY KEY (task_id, device_key, threads)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS top_results (
  task_id    INTEGER NOT NULL,
  device_key TEXT NOT NULL,
  threads    INTEGER NOT NULL,
  mean_cost  REAL NOT NULL,
  result_id  INTEGER NOT NULL,       -- results(id); the 20 fastest error-free of the group
  PRIMARY KEY (task_id, device_key, threads, mean_cost, result_id)
) WITHOUT ROWID;
-- (the trigger, kBestTriggerSql, follows these tables)
CREATE INDEX IF NOT EXISTS results_by_config ON results (config_id, device_key, error_no, mean_cost);
)sql";

// A bulk insert (RecordStore::bulk_insert) drops it inside its transaction, which holds the
// write lock, and creates it again before the commit, having merged the groups it touched at
// once (kMergeBulkSql): run row by row, the trigger costs three times the insert.
const char* const kBestTriggerSql = R"sql(
CREATE TRIGGER IF NOT EXISTS results_keep_best AFTER INSERT ON results BEGIN
  INSERT INTO best_groups(task_id, device_key, threads, measured)
    SELECT task_id, NEW.device_key, NEW.threads, 1 FROM configs WHERE id = NEW.config_id
    ON CONFLICT(task_id, device_key, threads) DO UPDATE SET measured = measured + 1;
  INSERT INTO top_results(task_id, device_key, threads, mean_cost, result_id)
    SELECT task_id, NEW.device_key, NEW.threads, NEW.mean_cost, NEW.id FROM configs
    WHERE id = NEW.config_id AND NEW.error_no = 0;
  DELETE FROM top_results
    WHERE task_id = (SELECT task_id FROM configs WHERE id = NEW.config_id)
      AND device_key = NEW.device_key AND threads = NEW.threads AND NEW.error_no = 0
      AND (mean_cost, result_id) > (
        SELECT mean_cost, result_id FROM top_results
        WHERE task_id = (SELECT task_id FROM configs WHERE id = NEW.config_id)
          AND device_key = NEW.device_key AND threads = NEW.threads
        ORDER BY mean_cost, result_id LIMIT 1 OFFSET 19);
END;
)sql";

const char* const kBulkStageSql = R"sql(
CREATE TEMP TABLE bulk_rows(task_id INTEGER, config_index INTEGER, entity TEXT,
  device_key TEXT, costs TEXT, mean_cost REAL, error_no INTEGER, error_msg TEXT, all_cost REAL,
  compile_s REAL, timestamp REAL, threads INTEGER, number INTEGER, tuner TEXT, run_id TEXT,
  trial INTEGER);
)sql";

// The first row of a (task, config index) names its entity, as INSERT OR IGNORE row by row
// would; results keep the order they were added in.
const char* const kBulkFlushSql = R"sql(
INSERT INTO configs(task_id, config_index, entity)
  SELECT task_id, config_index, entity FROM bulk_rows WHERE true ORDER BY rowid
  ON CONFLICT(task_id, config_index) DO NOTHING;
INSERT INTO results(config_id, device_key, costs, mean_cost, error_no, error_msg, all_cost,
    compile_s, timestamp, threads, number, tuner, run_id, trial)
  SELECT c.id, b.device_key, b.costs, b.mean_cost, b.error_no, b.error_msg, b.all_cost,
    b.compile_s, b.timestamp, b.threads, b.number, b.tuner, b.run_id, b.trial
  FROM bulk_rows b JOIN configs c ON c.task_id = b.task_id AND c.config_index = b.config_index
  ORDER BY b.rowid;
)sql";

const char* const kMergeBulkSql = R"sql(
CREATE TEMP TABLE bulk_touched(task_id, device_key, threads, measured,
  PRIMARY KEY (task_id, device_key, threads)) WITHOUT ROWID;
INSERT INTO bulk_touched SELECT task_id, device_key, threads, count(*) FROM bulk_fresh
  WHERE true GROUP BY task_id, device_key, threads;
INSERT INTO best_groups(task_id, device_key, threads, measured)
  SELECT task_id, device_key, threads, measured FROM bulk_touched WHERE true
  ON CONFLICT(task_id, device_key, threads) DO UPDATE SET measured = measured + excluded.measured;
CREATE TEMP TABLE bulk_candidates AS
  SELECT t.task_id, t.device_key, t.threads, t.mean_cost, t.result_id FROM bulk_touched g
    JOIN top_results t ON t.task_id = g.task_id AND t.device_key = g.device_key
      AND t.threads = g.threads
  UNION ALL SELECT task_id, device_key, threads, mean_cost, id FROM bulk_fresh WHERE error_no = 0;
DELETE FROM top_results WHERE (task_id, device_key, threads) IN (
  SELECT task_id, device_key, threads FROM bulk_touched);
INSERT INTO top_results(task_id, device_key, threads, mean_cost, result_id)
  SELECT task_id, device_key, threads, mean_cost, result_id FROM (
    SELECT *, row_number() OVER (PARTITION BY task_id, device_key, threads
                                 ORDER BY mean_cost, result_id) AS rank FROM bulk_candidates)
  WHERE rank <= 20;
DROP TABLE bulk_fresh;
DROP TABLE bulk_touched;
DROP TABLE bulk_candidates;
)sql";

}  // namespace tensortune::records
