#pragma once
/// \file
/// Private to records/: the entity parser on an already parsed JSON value, so that a log line's
/// entity is not written back to text and parsed again.

#include <nlohmann/json.hpp>

#include "schedule_space/config_space.h"
#include "support/error.h"

namespace tensortune::records::detail {

/// What records::entity_from_json does after parsing the text.
Expected<schedule_space::Entity> entity_from_json_value(const nlohmann::json& list);

}  // namespace tensortune::records::detail
