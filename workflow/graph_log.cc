#include "workflow/graph_log.h"

#include <cstdio>
#include <fstream>
#include <map>

#include "records/autotvm_log.h"
#include "records/record_decoding.h"
#include "schedule_space/task.h"

namespace tensortune::workflow {

namespace gt = tuner::graph_tuner;
namespace ss = schedule_space;

Status export_graph_log(const std::string& path, const gt::NetworkProblem& np,
                        const std::vector<int>& choice, const std::string& device_key,
                        records::RecordStore& store) {
  TT_ASSIGN_OR_RETURN(auto all, store.all_records());
  std::map<std::pair<std::string, std::string>, const records::StoredRecord*> best;
  for (const auto& r : all) {
    if (!r.result.ok() || r.result.device_key != device_key) continue;
    auto& slot = best[{r.task.workload_key, r.entity_json}];
    if (!slot || r.result.mean_cost() < slot->result.mean_cost()) slot = &r;
  }
  std::ofstream out(path);
  if (!out) return invalid_argument("--export-log: cannot write " + path);
  int lines = 0;
  for (size_t n = 0; n < np.nodes.size(); ++n) {
    if (!np.tuned[n]) continue;
    const auto& c = np.candidates[n][static_cast<size_t>(choice[n])];
    auto it = best.find({c.workload_key, c.entity_json});
    if (it == best.end()) continue;
    TT_ASSIGN_OR_RETURN(std::string line, records::to_autotvm_line(*it->second));
    out << line << "\n";
    ++lines;
  }
  if (!out) return invalid_argument("--export-log: cannot write " + path);
  std::printf(
      "wrote %s: %d records, one per tuned conv node in node order (AutoTVM's graph opt "
      "log, what apply_graph_best reads)\n",
      path.c_str(), lines);
  return ok_status();
}

Expected<std::vector<records::RecordStore::GraphBestEntry>> import_graph_log(
    const std::string& path, const gt::NetworkProblem& np, const ss::Target& target) {
  std::ifstream in(path);
  if (!in) return not_found("--from-log: cannot open " + path);
  std::vector<records::RecordStore::GraphBestEntry> entries;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + " line " + std::to_string(number);
    auto parsed = records::parse_autotvm_line(line, target.vector_lanes);
    if (!parsed) return parsed.error().with_context(where);
    const ss::Template& t = ss::template_of(parsed->task);
    if (t.operator_kind() != ss::OperatorKind::kConv2d ||
        t.network_layout() != ss::NetworkLayout::kBlocked)
      continue;
    const size_t n = entries.size();
    if (n >= np.nodes.size())
      return invalid_argument(where + ": more conv2d records than the model's " +
                              std::to_string(np.nodes.size()) + " conv nodes");
    const auto& w = std::get<ss::Conv2dWorkload>(parsed->task.workload);
    if (ss::describe_workload(w) != ss::describe_workload(np.workloads[n]))
      return invalid_argument(where + " is for " + ss::describe_workload(w) + ", but conv node " +
                              np.nodes[n] + " (number " + std::to_string(n + 1) + ") is " +
                              ss::describe_workload(np.workloads[n]) +
                              ": the log is not this model's");
    const std::string key = ss::workload_key(parsed->task);
    const std::string entity = records::entity_to_json(parsed->entity);
    auto decoded = records::decode_record(key, entity, target);
    if (!decoded) return decoded.error().with_context(where);
    entries.push_back({np.nodes[n], key, entity});
  }
  if (entries.size() != np.nodes.size())
    return invalid_argument(path + " has " + std::to_string(entries.size()) +
                            " blocked conv2d records; the model has " +
                            std::to_string(np.nodes.size()) + " conv nodes");
  return entries;
}

}  // namespace tensortune::workflow
