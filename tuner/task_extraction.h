#pragma once
/// \file
/// Task extraction: the tunable operators of a network as tuning tasks, deduplicated by
/// workload key, in first-use order. conv2d with groups 1 (in NCHW or already NCHW[x]c)
/// becomes a task with its NCHW workload: conv2d_NCHWc.x86 on a CPU target, conv2d_nchw.cuda on
/// a CUDA target. dense becomes dense_pack.x86, or on CUDA dense_small_batch.gpu below a batch
/// of 32 and dense_large_batch.gpu from 32 (AutoTVM's CUDA strategy). On a CPU target, a 3x3
/// stride-1 undilated conv2d also becomes a conv2d_NCHWc_winograd.x86 task, right after its
/// direct one (unless `winograd` is false): compilation takes whichever measured faster.
/// Depthwise and grouped convs have no template yet and are reported, not extracted.
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "schedule_space/task.h"

namespace tensortune::tuner {

struct ExtractedTask {
  schedule_space::Task task;
  std::string workload_key;
  /// Names of the graph nodes that run this workload (a task can serve several layers).
  std::vector<std::string> nodes;
};

struct TaskExtraction {
  std::vector<ExtractedTask> tasks;
  /// Nodes with no template ("layer3.dw: depthwise conv2d, no template").
  std::vector<std::string> untunable;
};

Expected<TaskExtraction> extract_tasks(const graph::Graph& graph,
                                       const schedule_space::Target& target, bool winograd = true);

}  // namespace tensortune::tuner
