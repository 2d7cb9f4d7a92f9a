#pragma once
/// \file
/// The graph tuner's layout transforms timed on a farm: one tracker job per transform, on
/// devices of the key the model was tuned on.
#include <string>

#include "compiler/measure/local_measurer.h"
#include "schedule_space/task.h"
#include "support/error.h"
#include "tuner/graph_tuner/transform_costs.h"

namespace tensortune::workflow {

struct FarmAddress {
  std::string tracker;  ///< HOST:PORT
  std::string device_key;
  std::string token_file, tls_ca, tls_cert, tls_key;
};

/// Times transforms on the farm's devices of `farm.device_key`, as many at once as the key has
/// slots (at most 16). Fails at once when the tracker has no device of the key.
Expected<tuner::graph_tuner::TransformTimer> farm_transform_timer(
    const FarmAddress& farm, const schedule_space::Target& target,
    const measure::MeasureOptions& options);

}  // namespace tensortune::workflow
