#pragma once
/// \file
/// AutoTVM's JSON-lines log format (version 0.2), both ways, so that existing logs keep working:
///   {"input": [target, task_name, args, {}],
///    "config": {"index": i, "code_hash": null, "entity": [[knob, "sp"|"ot"|"an", value], ...]},
///    "result": [costs_s, error_no, all_cost_s, timestamp], "version": 0.2, "tvm_version": "..."}
/// Lines starting with '#' and blank lines are skipped. The config index is advisory: on import
/// it is recomputed from the entity in our space (our spaces have extra knobs and AutoTVM's
/// 'verbose' candidate order follows CPython set order, which we do not replicate).
///
/// Every AutoTVM version's form reads: split sizes with the outermost factor written out
/// ([2, 32], TopHub-era) or as -1, knobs in any order, targets with keys and attributes, extra
/// fields (code_hash, tvm_version). Export writes the newer form (-1 first).

#include <cstdint>
#include <istream>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "records/record_store.h"
#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"
#include "support/error.h"

namespace tensortune::records {

/// Fails when the stored workload key or entity is not JSON (a damaged DB row).
Expected<std::string> to_autotvm_line(const StoredRecord& record);

/// AutoTVM's target string, taken apart: "llvm -mcpu=skylake-avx512 -keys=cpu" is kind llvm,
/// keys {cpu}, attrs {mcpu: skylake-avx512}. A flag without a value maps to "true".
struct TargetString {
  std::string kind;
  std::vector<std::string> keys;
  std::map<std::string, std::string> attrs;
};
Expected<TargetString> parse_target_string(const std::string& spec);

/// The device key an imported record is filed under when none is given: the target's -model,
/// else its -mcpu, else its kind ("titanx", "skylake-avx512", "llvm").
std::string device_key_from_target(const TargetString& target);

struct ParsedLogLine {
  schedule_space::Task task;  ///< target.spec is the log's target string
  schedule_space::Entity entity;
  int64_t logged_index = 0;
  schedule_space::MeasureResult result;
};

/// Parses one line; errors name the field and the value ("input[2][3]: padding [1, 1, 1] has 3
/// values, expected 1, 2 or 4"). `vector_lanes` sets the parsed task's target lanes. A
/// well-formed record of something tensortune lacks (a template, a dtype, a layout) fails
/// with kUnimplemented; a malformed one with kInvalidArgument.
Expected<ParsedLogLine> parse_autotvm_line(const std::string& line, int vector_lanes);

/// Rebuilds a task from its workload key (AutoTVM's [task_name, args] tuple) and target string.
Expected<schedule_space::Task> task_from_workload_key(const std::string& workload_key,
                                                      const std::string& target, int vector_lanes);

struct ImportOptions {
  std::string device_key;  ///< empty: each record's device_key_from_target
  int vector_lanes = 16;
  /// Records of templates, dtypes or layouts tensortune lacks are counted in
  /// ImportStats::skipped instead of failing the import.
  bool skip_unsupported = false;
};

struct ImportStats {
  int64_t lines = 0;     ///< lines read, comments included
  int64_t imported = 0;  ///< records written
  struct Skipped {
    int64_t count = 0;
    std::string reason;  ///< the first record's
  };
  std::map<std::string, Skipped> skipped;  ///< per task name (input[1])
  std::set<std::string> device_keys;       ///< the keys the records were filed under
};

/// Imports every line in one transaction: a malformed line (or, unless skip_unsupported, an
/// unsupported one) fails the whole import with its line number, and nothing is written.
Expected<ImportStats> import_autotvm_log(RecordStore& store, std::istream& in,
                                         const std::string& source, const ImportOptions& options);

/// Writes every record, oldest first; returns the number of lines.
Expected<int64_t> export_autotvm_log(RecordStore& store, std::ostream& out);

}  // namespace tensortune::records
