// Tuning curves of the most recently measured tasks (record_store.h: recent_progress), for the
// tracker's dashboard.
#include <algorithm>

#include "records/detail/statement.h"
#include "records/record_store.h"

namespace tensortune::records {
using detail::Statement;

Expected<std::vector<RecordStore::TaskProgress>> RecordStore::recent_progress(int groups) {
  if (groups < 1 || groups > 100)
    return invalid_argument("groups = " + std::to_string(groups) + ", must be in [1, 100]");
  // The newest results by rowid (no scan of the archive), grouped in order of first sight.
  Statement recent(db_.get(),
                   "SELECT c.task_id, r.device_key FROM (SELECT id, config_id, device_key FROM "
                   "results ORDER BY id DESC LIMIT 20000) r JOIN configs c ON c.id = r.config_id "
                   "ORDER BY r.id DESC");
  TT_RETURN_IF_ERROR(recent.prepared());
  std::vector<std::pair<int64_t, std::string>> picked;
  while (static_cast<int>(picked.size()) < groups && recent.step()) {
    std::pair<int64_t, std::string> g{recent.int64(0), recent.text(1)};
    if (std::find(picked.begin(), picked.end(), g) == picked.end()) picked.push_back(g);
  }
  TT_RETURN_IF_ERROR(recent.status());
  std::vector<TaskProgress> out;
  for (const auto& [task_id, device_key] : picked) {
    Statement task(db_.get(), "SELECT workload_key, template, flop FROM tasks WHERE id = ?");
    TT_RETURN_IF_ERROR(task.prepared());
    task.bind(1, task_id);
    if (!task.step()) continue;
    TaskProgress p;
    p.workload_key = task.text(0);
    p.template_name = task.text(1);
    p.device_key = device_key;
    const double flop = task.real(2);
    Statement rows(db_.get(),
                   "SELECT r.mean_cost, r.error_no FROM results r JOIN configs c ON c.id = "
                   "r.config_id WHERE c.task_id = ? AND r.device_key = ? ORDER BY r.id");
    TT_RETURN_IF_ERROR(rows.prepared());
    rows.bind(1, task_id);
    rows.bind(2, device_key);
    double best = 0;
    while (rows.step()) {
      ++p.results;
      const double cost = rows.real(0);
      if (rows.int64(1) == 0 && cost > 0 && flop / cost / 1e9 > best) {
        best = flop / cost / 1e9;
        p.best.emplace_back(p.results, best);
      }
    }
    TT_RETURN_IF_ERROR(rows.status());
    if (p.best.empty() || p.best.back().first != p.results) p.best.emplace_back(p.results, best);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tensortune::records
