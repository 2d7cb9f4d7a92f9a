#pragma once
/// \file
/// Private to records/: the columns every record query selects (results r, configs c, tasks t)
/// and the StoredRecord they read into, shared by the store's query files.
#include "records/detail/statement.h"
#include "records/record_store.h"

namespace tensortune::records::detail {

inline constexpr char kRecordColumns[] =
    "t.workload_key, t.template, t.target, t.flop, t.space_size, c.config_index, c.entity, "
    "r.device_key, r.costs, r.error_no, r.error_msg, r.all_cost, r.compile_s, r.timestamp, "
    "r.threads, r.number, r.tuner, r.run_id, r.trial, r.client, r.device";
/// The number of columns of kRecordColumns: a query's own columns follow from this index.
inline constexpr int kRecordColumnCount = 21;

/// The row's first kRecordColumnCount columns.
StoredRecord read_record(const Statement& q);

}  // namespace tensortune::records::detail
