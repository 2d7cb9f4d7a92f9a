#pragma once
/// \file
/// AutoTVM's graph-opt log (resnet-18_graph_opt.log, what apply_graph_best reads): one record
/// per tuned conv node of a network, in node order. graph-tune writes it (--export-log) and
/// takes a choice from it instead of solving (--from-log).
#include <string>
#include <vector>

#include "records/record_store.h"
#include "schedule_space/task.h"
#include "support/error.h"
#include "tuner/graph_tuner/network_problem.h"

namespace tensortune::workflow {

/// Writes the chosen candidate's fastest stored record of `device_key` for every tuned node.
Status export_graph_log(const std::string& path, const tuner::graph_tuner::NetworkProblem& np,
                        const std::vector<int>& choice, const std::string& device_key,
                        records::RecordStore& store);

/// The choice from an AutoTVM graph-opt log: its records of blocked conv2d templates (direct or
/// Winograd) in order, one per conv node of the model in node order, each for that node's
/// workload. Errors name the line and say which node it does not fit.
Expected<std::vector<records::RecordStore::GraphBestEntry>> import_graph_log(
    const std::string& path, const tuner::graph_tuner::NetworkProblem& np,
    const schedule_space::Target& target);

}  // namespace tensortune::workflow
