#pragma once
/// \file
/// The record store's schema, versioned in the `meta` table.

namespace tensortune::records {

/// 1: the first. 2: configs of multi-way splits indexed in AutoTVM's candidate order
/// (schema_migration.h reindexes version-1 DBs from their entities when they are opened).
inline constexpr int kSchemaVersion = 2;

/// CREATE statements (idempotent).
extern const char* const kSchemaSql;

}  // namespace tensortune::records
