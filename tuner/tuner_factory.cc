#include "tuner/tuner_factory.h"

#include <map>

#include "records/autotvm_log.h"
#include "schedule_space/features.h"
#include "support/log.h"
#include "tuner/ga_tuner.h"
#include "tuner/index_tuners.h"
#include "tuner/xgb_tuner.h"

namespace tensortune::tuner {

namespace ss = schedule_space;

const std::vector<std::string>& tuner_names() {
  static const std::vector<std::string> names{"grid", "random", "ga", "xgb"};
  return names;
}

Expected<TransferSet> load_transfer_samples(records::RecordStore& store, const ss::Task& task,
                                            int threads, const std::string& device_key) {
  TT_ASSIGN_OR_RETURN(auto records, store.all_records());
  const std::string own_key = ss::workload_key(task);
  struct Group {
    std::optional<ss::Task> task;
    std::optional<ss::ConfigSpace> space;
    std::vector<std::pair<std::vector<float>, double>> samples;  // features, gflops
  };
  std::map<std::string, Group> groups;
  for (const auto& r : records) {
    if (r.task.template_name != task.template_name || r.task.target != task.target.spec ||
        (!device_key.empty() && r.result.device_key != device_key))
      continue;
    // The task's own records at this thread count are the tuning loop's to replay.
    if (r.task.workload_key == own_key && (threads == 0 || r.result.threads == threads)) continue;
    Group& g = groups[r.task.workload_key + "@" + std::to_string(r.result.threads)];
    if (!g.task) {
      auto t = records::task_from_workload_key(r.task.workload_key, r.task.target,
                                               task.target.vector_lanes);
      if (!t) continue;
      // The same target as the task's: its measured CPU model too, so that the machine-relative
      // features of the samples are the task's own.
      if (t->target == task.target) t->target = task.target;
      auto s = ss::make_config_space(*t);
      if (!s) continue;
      g.task = *t;
      g.space = std::move(*s);
    }
    auto entity = records::entity_from_json(r.entity_json);
    if (!entity) continue;
    auto config = g.space->config_from_entity(*entity);
    if (!config || !g.space->is_valid(*config)) continue;
    const double gflops =
        r.result.ok() && r.result.mean_cost() > 0 ? r.task.flop / r.result.mean_cost() / 1e9 : 0.0;
    g.samples.emplace_back(ss::config_features(*g.task, *g.space, *config), gflops);
  }
  TransferSet out;
  for (auto& [key, g] : groups) {
    double best = 0;
    for (const auto& s : g.samples) best = std::max(best, s.second);
    if (best <= 0) continue;
    ++out.workloads;
    for (auto& s : g.samples) {
      out.features.push_back(std::move(s.first));
      out.labels.push_back(static_cast<float>(s.second / best));
    }
  }
  return out;
}

Expected<std::unique_ptr<Tuner>> make_tuner(const ss::Task& task, const ss::ConfigSpace& space,
                                            const TunerOptions& o, records::RecordStore* store) {
  if (o.transfer && o.name != "xgb")
    return invalid_argument("--transfer needs --tuner xgb (it pre-trains the cost model), not '" +
                            o.name + "'");
  if (o.name == "grid") return std::unique_ptr<Tuner>(std::make_unique<GridTuner>(space));
  if (o.name == "random")
    return std::unique_ptr<Tuner>(std::make_unique<RandomTuner>(space, o.seed));
  if (o.name == "ga") {
    GaOptions go;
    go.seed = o.seed;
    go.pop_size = o.pop_size;
    TT_ASSIGN_OR_RETURN(auto ga, GaTuner::create(space, go));
    return std::unique_ptr<Tuner>(std::move(ga));
  }
  if (o.name == "xgb") {
    XgbTunerOptions xo;
    xo.seed = o.seed;
    xo.plan_size = o.plan_size;
    xo.loss = o.xgb_loss;
    TT_ASSIGN_OR_RETURN(auto xgb, XgbTuner::create(task, space, xo));
    if (o.transfer || (o.transfer_if_available && store)) {
      if (!store) return invalid_argument("--transfer needs a record DB");
      TT_ASSIGN_OR_RETURN(TransferSet t,
                          load_transfer_samples(*store, task, o.threads, o.device_key));
      if (t.workloads == 0 && !o.transfer) return std::unique_ptr<Tuner>(std::move(xgb));
      if (t.workloads == 0)
        return invalid_argument("--transfer: " + store->path() + " has no records of other " +
                                task.template_name + " workloads for target '" + task.target.spec +
                                "' to pre-train on");
      FeatureMatrix f;
      for (const auto& row : t.features) f.append(row);
      TT_RETURN_IF_ERROR(xgb->add_transfer_samples(f, t.labels));
      logger("tuner")->info(
          "transfer: pre-trained on {} records of {} other {} workloads or thread counts",
          t.labels.size(), t.workloads, task.template_name);
    }
    return std::unique_ptr<Tuner>(std::move(xgb));
  }
  std::string known;
  for (const auto& n : tuner_names()) known += (known.empty() ? "" : ", ") + n;
  return invalid_argument("--tuner = '" + o.name + "' is not one of " + known);
}

}  // namespace tensortune::tuner
