#include "workflow/best_query.h"

#include <algorithm>
#include <ctime>
#include <regex>

#include "compiler/codegen/llvm/kernel.h"
#include "records/autotvm_log.h"
#include "tuner/task_extraction.h"
#include "workflow/model_source.h"

namespace tensortune::workflow {

Expected<double> parse_time(const std::string& flag, const std::string& text) {
  if (text.empty()) return 0.0;
  static const std::regex number("[0-9]+(\\.[0-9]+)?");
  if (std::regex_match(text, number)) return std::stod(text);
  std::tm tm{};
  for (const char* format : {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"}) {
    tm = std::tm{};
    const char* end = strptime(text.c_str(), format, &tm);
    if (end && *end == '\0') return static_cast<double>(timegm(&tm));
  }
  return invalid_argument(flag + " = '" + text +
                          "': a date (2026-11-20), a UTC time (2026-11-20T08:30:00) or unix "
                          "seconds");
}

std::string described_workload(const records::StoredRecord& r) {
  auto task = records::task_from_workload_key(r.task.workload_key, r.task.target, 16);
  return task ? schedule_space::describe_workload(task->workload) : r.task.workload_key;
}

Expected<records::RecordStore::BestQuery> best_query(const BestFilters& f) {
  records::RecordStore::BestQuery q;
  q.template_name = f.template_filter;
  q.device_key = f.device_key;
  q.threads = f.threads;
  q.top_k = f.top_k;
  q.exclude_devices = f.exclude_devices;
  TT_ASSIGN_OR_RETURN(q.since, parse_time("--since", f.since));
  TT_ASSIGN_OR_RETURN(q.until, parse_time("--until", f.until));
  if (!f.workload.empty()) {
    static const std::regex shape("[0-9]+(x[0-9]+)*");
    if (f.workload[0] == '[')
      q.workload_keys = {f.workload};
    else if (std::regex_match(f.workload, shape))
      q.shape = f.workload;
    else
      return invalid_argument(
          "--workload = '" + f.workload +
          "': give a tensor shape such as 1x64x56x56 (data) or 64x64x3x3 "
          "(kernel), or an exact workload key ([\"TEMPLATE\", ...], as --json prints it)");
  }
  if (!f.model.model.empty()) {
    TT_ASSIGN_OR_RETURN(graph::Graph model, load_model(f.model));
    TT_ASSIGN_OR_RETURN(auto extraction, tuner::extract_tasks(model, codegen::host_target()));
    std::vector<std::string> keys;
    for (const auto& t : extraction.tasks) keys.push_back(schedule_space::workload_key(t.task));
    if (q.workload_keys.empty()) {
      q.workload_keys = keys;
    } else if (std::find(keys.begin(), keys.end(), q.workload_keys[0]) == keys.end()) {
      q.workload_keys.clear();  // the key is not one of the model's: nothing matches
      q.workload_keys.push_back("-");
    }
  }
  return q;
}

}  // namespace tensortune::workflow
