#pragma once
/// \file
/// A stored record back into the template config it measured: the one decoding the compiler,
/// the graph tuner and Python share, whatever the template.

#include <string>

#include "schedule_space/task.h"
#include "support/error.h"

namespace tensortune::records {

/// The config an entity JSON names in `space`, checked valid there; kInvalidArgument naming
/// what does not decode. For many records of one task: build the space once.
Expected<schedule_space::Config> decode_config(const schedule_space::ConfigSpace& space,
                                               const std::string& entity_json);

/// The record's task (from its workload key, on `target`), its template's space and the config
/// (decode_config). kInvalidArgument naming what does not
/// decode: the key, the entity, or a config outside the space (an AutoTVM record whose register
/// tile exceeds our budget, say).
Expected<schedule_space::TemplateConfig> decode_record(const std::string& workload_key,
                                                       const std::string& entity_json,
                                                       const schedule_space::Target& target);

}  // namespace tensortune::records
