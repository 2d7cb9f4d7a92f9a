#pragma once
/// \file
/// The filters of a best-record query (`records best`, Python's Records.best, a tracker's
/// BestRecords) as users write them, turned into the store's query.
#include <string>
#include <vector>

#include "records/record_store.h"
#include "support/error.h"
#include "workflow/model_source.h"

namespace tensortune::workflow {

struct BestFilters {
  std::string device_key;
  std::string workload;         ///< a shape (1x64x56x56, 64x64x3x3) or an exact workload key
  std::string template_filter;  ///< a template name
  ModelOptions model;           ///< --model / --input-shape: the model's tasks only
  int threads = 0;
  std::string since, until;  ///< see parse_time
  int top_k = 1;
  std::vector<std::string> exclude_devices;  ///< farm devices to distrust
};

/// "2026-11-20", "2026-11-20T08:30:00" (UTC) or unix seconds; 0 for an empty text. Errors name
/// `flag`.
Expected<double> parse_time(const std::string& flag, const std::string& text);

/// "conv2d 1x64x56x56 k64x3x3 ..." for a stored record's workload, or its key.
std::string described_workload(const records::StoredRecord& r);

/// The store's query for the filters; errors name the flag (--workload, --since, ...).
Expected<records::RecordStore::BestQuery> best_query(const BestFilters& f);

}  // namespace tensortune::workflow
