#pragma once
/// \file
/// The conv2d and dense workloads of ResNet-18 (batch 1, 224x224, float32), the network every
/// AutoTVM tutorial tunes: the demo and the benchmarks use them until task extraction from
/// whole models arrives.

#include <string>
#include <vector>

#include "schedule_space/task.h"

namespace tensortune::tuner {

struct NamedTask {
  std::string name;           ///< "conv 3x3 64->64 @56"
  std::string template_name;  ///< conv2d_NCHWc.x86 or dense_pack.x86
  schedule_space::Workload workload;
};

/// conv1 (7x7/2), the ten 3x3 and 1x1 convolutions of stages 2-5 (deduplicated), and the
/// 512 -> 1000 classifier, in network order.
std::vector<NamedTask> resnet18_workloads();

}  // namespace tensortune::tuner
