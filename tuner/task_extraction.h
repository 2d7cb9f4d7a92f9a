#pragma once
/// \file
/// Task extraction: the tunable operators of a network as tuning tasks, deduplicated by
/// workload key, in first-use order. Every conv2d with groups 1 (in NCHW or already NCHW[x]c)
/// and every dense gets a task with its NCHW workload for each template of the target's backend
/// that serves it and is extracted for it (schedule_space::templates_for,
/// Template::extracted_for): on a CPU a 3x3 stride-1 conv gets a direct and a Winograd task,
/// and compilation runs whichever measured faster; a depthwise conv gets the depthwise template's
/// task. Other grouped convs have no template and are reported, not extracted.
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "schedule_space/task.h"
#include "schedule_space/template.h"

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

/// The tasks of the anchors compilation forms (convolutions, dense layers, MatMuls by constant
/// weights once DenseFromMatMul made them dense, batch matmuls of two tensors), after the passes
/// that form them. `algorithms`: the algorithms left out (e.g. "winograd" for `--no-winograd`).
/// `integer_kernels`: quantized convolutions (QDQ, QLinearConv, ConvInteger) and dense layers
/// are the int8 templates' tasks, as compile
/// runs them (passes::fake_quantization_to_integer, for those a template of the target serves);
/// false: their float tasks, as `compile --no-int8` runs them.
/// `precision`: the float operators' (schedule_space::at_precision), as `compile --precision`
/// runs them.
Expected<TaskExtraction> extract_tasks(
    const graph::Graph& graph, const schedule_space::Target& target,
    const schedule_space::AlgorithmFilter& algorithms = {}, bool integer_kernels = true,
    schedule_space::Precision precision = schedule_space::Precision::kFloat32);

}  // namespace tensortune::tuner
