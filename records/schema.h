#pragma once
/// \file
/// The record store's schema, versioned in the `meta` table.

namespace tensortune::records {

inline constexpr int kSchemaVersion = 1;

/// CREATE statements (idempotent).
extern const char* const kSchemaSql;

}  // namespace tensortune::records
