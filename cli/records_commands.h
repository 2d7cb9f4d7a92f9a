#pragma once
/// \file
/// `tensortune records`: its flags and subcommands, one file per job (records_best.cc: best
/// and its filters; records_maintenance.cc: stats, check, compact; cmd_records.cc: export,
/// import, plot and the registration).
#include <string>
#include <vector>

#include "cli/model_args.h"
#include "records/record_store.h"
#include "support/error.h"

namespace tensortune::cli {

struct RecordsFlags {
  std::string db = "tensortune.db";
  std::string output;
  std::string workload;
  bool json = false;
  bool json_lines = false;
  std::string format = "autotvm";
  bool skip_unsupported = false;
  std::string log;
  std::string device_key;
  std::string tracker, token_file, tls_ca, tls_cert, tls_key;
  // records best's filters
  std::string template_filter;
  ModelFlags model;  ///< --model / --input-shape: the model's tasks only
  int threads = 0;
  std::string since, until;
  int top_k = 1;
  std::vector<std::string> exclude_devices;  ///< --exclude-device: farm devices to distrust
};

/// "2026-11-20", "2026-11-20T08:30:00" (UTC) or unix seconds; 0 for an empty flag. Errors name
/// `flag`.
Expected<double> parse_time(const std::string& flag, const std::string& text);

/// "conv2d 1x64x56x56 k64x3x3 ..." for a stored record's workload, or its key.
std::string described_workload(const records::StoredRecord& r);

/// The filters of `records best` (--workload, --template, --model, ...) as the store and the
/// tracker take them; errors name the flag.
Expected<records::RecordStore::BestQuery> best_query(const RecordsFlags& f);

Status run_best(const RecordsFlags& f);
Status run_stats(const RecordsFlags& f);
Status run_check(const RecordsFlags& f, bool repair);
Status run_compact(const RecordsFlags& f, int keep_top, const std::string& keep_since);

}  // namespace tensortune::cli
