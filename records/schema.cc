#include "records/schema.h"

namespace tensortune::records {

const char* const kSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tasks (
  id           INTEGER PRIMARY KEY,
  workload_key TEXT NOT NULL,       -- AutoTVM workload tuple as JSON
  template     TEXT NOT NULL,       -- conv2d_NCHWc.x86, dense_pack.x86, ...
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
  trial      INTEGER NOT NULL DEFAULT -1
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
CREATE INDEX IF NOT EXISTS results_by_config ON results (config_id, device_key, error_no, mean_cost);
CREATE INDEX IF NOT EXISTS configs_by_task ON configs (task_id);
)sql";

}  // namespace tensortune::records
