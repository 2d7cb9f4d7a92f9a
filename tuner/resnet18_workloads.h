#pragma once
/// \file
/// The conv2d and dense workloads of ResNet-18 (batch 1, 224x224, float32), the network every
/// AutoTVM tutorial tunes, as a fixed list: the demo and the tuning benchmarks use it so that
/// their figures compare across sessions. Models are tuned from their own tasks
/// (task_extraction.h).

#include <string>
#include <vector>

#include "schedule_space/task.h"

namespace tensortune::tuner {

struct NamedTask {
  std::string name;           ///< "conv 3x3 64->64 @56"
  std::string template_name;  ///< the CPU backend's first template of the operator
  schedule_space::Workload workload;
};

/// conv1 (7x7/2), the ten 3x3 and 1x1 convolutions of stages 2-5 (deduplicated), and the
/// 512 -> 1000 classifier, in network order.
std::vector<NamedTask> resnet18_workloads();

}  // namespace tensortune::tuner
