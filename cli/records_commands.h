#pragma once
/// \file
/// `tensortune records`: its flags and subcommands, one file per job (records_best.cc: best
/// and its filters; records_maintenance.cc: stats, check, compact; cmd_records.cc: export,
/// import, plot and the registration).
#include <string>
#include <vector>

#include "records/record_store.h"
#include "support/error.h"
#include "workflow/best_query.h"

namespace tensortune::cli {

/// The options of every `records` subcommand; the filters of `records best` (also --workload
/// and --device-key of export and import) are the workflow's.
struct RecordsFlags : workflow::BestFilters {
  std::string db = "tensortune.db";
  std::string output;
  bool json = false;
  bool json_lines = false;
  std::string format = "autotvm";
  bool skip_unsupported = false;
  std::string log;
  std::string tracker, token_file, tls_ca, tls_cert, tls_key;
};

Status run_best(const RecordsFlags& f);
Status run_stats(const RecordsFlags& f);
Status run_check(const RecordsFlags& f, bool repair);
Status run_compact(const RecordsFlags& f, int keep_top, const std::string& keep_since);

}  // namespace tensortune::cli
