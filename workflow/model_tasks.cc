// Implements model_tasks.h.
#include "workflow/model_tasks.h"

#include <set>

#include "compiler/graph/sequence_range.h"

namespace tensortune::workflow {

Expected<tuner::TaskExtraction> extract_model_tasks(const ModelOptions& flags,
                                                    const schedule_space::Target& target) {
  TT_ASSIGN_OR_RETURN(auto algorithms, algorithm_filter(flags));
  TT_ASSIGN_OR_RETURN(auto range, sequence_range(flags));
  TT_ASSIGN_OR_RETURN(const auto precision, model_precision(flags, target.spec));
  if (!range) {
    TT_ASSIGN_OR_RETURN(graph::Graph model, load_model(flags));
    return tuner::extract_tasks(model, target, algorithms, !flags.no_int8, precision);
  }
  TT_ASSIGN_OR_RETURN(graph::SequencePlan plan, plan_model_range(flags));
  tuner::TaskExtraction all;
  std::set<std::string> seen_tasks, seen_untunable;
  TT_ASSIGN_OR_RETURN(const auto buckets, graph::buckets_of(*range));
  for (int64_t bucket : buckets) {
    TT_ASSIGN_OR_RETURN(graph::Graph model, load_model_at_length(flags, bucket));
    TT_ASSIGN_OR_RETURN(graph::Graph masked, graph::mask_sequence_padding(model, plan, bucket));
    auto extraction = tuner::extract_tasks(masked, target, algorithms, !flags.no_int8, precision);
    if (!extraction) return extraction.error().with_context("bucket " + std::to_string(bucket));
    for (auto& t : extraction->tasks) {
      if (!seen_tasks.insert(t.workload_key).second) continue;
      // A node runs one workload per bucket: its name says which.
      for (auto& node : t.nodes) node += " (length " + std::to_string(bucket) + ")";
      all.tasks.push_back(std::move(t));
    }
    for (auto& u : extraction->untunable)
      if (seen_untunable.insert(u).second) all.untunable.push_back(std::move(u));
  }
  return all;
}

}  // namespace tensortune::workflow
