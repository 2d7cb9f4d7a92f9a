#pragma once
/// \file
/// AutoTVM's JSON-lines log format (version 0.2), both ways, so that existing logs keep working:
///   {"input": [target, task_name, args, {}],
///    "config": {"index": i, "code_hash": null, "entity": [[knob, "sp"|"ot"|"an", value], ...]},
///    "result": [costs_s, error_no, all_cost_s, timestamp], "version": 0.2, "tvm_version": "..."}
/// Lines starting with '#' and blank lines are skipped. The config index is advisory: on import
/// it is recomputed from the entity in our space (our spaces have extra knobs and AutoTVM's
/// 'verbose' candidate order follows CPython set order, which we do not replicate).

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>

#include "records/record_store.h"
#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"
#include "support/error.h"

namespace tensortune::records {

std::string to_autotvm_line(const StoredRecord& record);

struct ParsedLogLine {
  schedule_space::Task task;  ///< target.spec is the log's target string
  schedule_space::Entity entity;
  int64_t logged_index = 0;
  schedule_space::MeasureResult result;
};

/// Parses one line; errors name the field and the value ("input[2][3]: padding [1, 1, 1] has 3
/// values, expected 1, 2 or 4"). `vector_lanes` sets the parsed task's target lanes.
Expected<ParsedLogLine> parse_autotvm_line(const std::string& line, int vector_lanes);

/// Rebuilds a task from its workload key (AutoTVM's [task_name, args] tuple) and target string.
Expected<schedule_space::Task> task_from_workload_key(const std::string& workload_key,
                                                      const std::string& target, int vector_lanes);

struct ImportStats {
  int64_t lines = 0;     ///< lines read, comments included
  int64_t imported = 0;  ///< records written
};

/// Imports every line in one transaction: a malformed line fails the whole import with its
/// line number, and nothing is written. Results are stored under `device_key`.
Expected<ImportStats> import_autotvm_log(RecordStore& store, std::istream& in,
                                         const std::string& source, const std::string& device_key,
                                         int vector_lanes);

/// Writes every record, oldest first; returns the number of lines.
Expected<int64_t> export_autotvm_log(RecordStore& store, std::ostream& out);

}  // namespace tensortune::records
