#pragma once
/// \file
/// The record store's schema, versioned in the `meta` table.

namespace tensortune::records {

/// 1: the first. 2: configs of multi-way splits indexed in AutoTVM's candidate order
/// (schema_migration.h reindexes version-1 DBs from their entities when they are opened).
/// 3: the best_groups and top_results tables, kept by a trigger on results (built from a full
/// scan when an older DB is opened). 4: without the index configs_by_task, which
/// UNIQUE(task_id, config_index) makes redundant (dropped when a version-3 DB is opened).
/// 5: results.client and results.device, who submitted and who measured a farm result (added,
/// empty, when a version-4 DB is opened).
inline constexpr int kSchemaVersion = 5;

/// Results kept per (task, device key, threads) group in top_results (AutoTVM's max_sch_num,
/// what the graph tuner takes per workload).
inline constexpr int kTopResults = 20;

/// CREATE statements (idempotent).
extern const char* const kSchemaSql;

/// The trigger that keeps best_groups and top_results with every result insert (a bulk insert
/// drops it and creates it again in its transaction).
extern const char* const kBestTriggerSql;

/// A bulk insert's staging table (bulk_rows: a result row with its task id, config index and
/// entity instead of a config id), and the statements that write it to configs and results.
extern const char* const kBulkStageSql;
extern const char* const kBulkFlushSql;

/// Merges the results of a bulk insert, staged in the temp table bulk_fresh(task_id,
/// device_key, threads, mean_cost, id, error_no), into best_groups and top_results; drops its
/// temp tables.
extern const char* const kMergeBulkSql;

/// Rebuilds best_groups and top_results from a full scan of results.
extern const char* const kRebuildBestSql;

}  // namespace tensortune::records
