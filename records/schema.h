#pragma once
/// \file
/// The record store's schema, versioned in the `meta` table.

namespace tensortune::records {

/// 1: the first. 2: configs of multi-way splits indexed in AutoTVM's candidate order
/// (schema_migration.h reindexes version-1 DBs from their entities when they are opened).
/// 3: the best_groups and top_results tables, kept by a trigger on results (built from a full
/// scan when an older DB is opened).
inline constexpr int kSchemaVersion = 3;

/// Results kept per (task, device key, threads) group in top_results (AutoTVM's max_sch_num,
/// what the graph tuner takes per workload).
inline constexpr int kTopResults = 20;

/// CREATE statements (idempotent).
extern const char* const kSchemaSql;

/// Rebuilds best_groups and top_results from a full scan of results.
extern const char* const kRebuildBestSql;

}  // namespace tensortune::records
