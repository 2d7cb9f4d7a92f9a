#pragma once
/// \file
/// A fixed-length numeric feature vector per config, for cost models: knob values plus loop
/// structure derived from the template (trip counts, vector length, unroll, parallel extent,
/// footprints). Counts enter as log2(1 + x) so that trees split on orders of magnitude.
/// Each template computes its own (Template::features); these are the tuners' entry points.

#include <string>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/task.h"

namespace tensortune::schedule_space {

/// Same length for every config of a template; names from feature_names().
std::vector<float> config_features(const Task& task, const ConfigSpace& space,
                                   const Config& config);
std::vector<std::string> feature_names(const std::string& template_name);

}  // namespace tensortune::schedule_space
