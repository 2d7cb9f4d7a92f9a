#pragma once
/// \file
/// A tracker's status as JSON, the one shape `tensortune status --json` prints and the
/// dashboard's /api/status serves: devices, queues and jobs (a running job with its ETA at the
/// pace so far), uptime, archived results and any security warning.
#include <nlohmann/json_fwd.hpp>

#include "proto/farm.pb.h"

namespace tensortune::tracker {

nlohmann::json status_to_json(const v1::StatusReply& status);

}  // namespace tensortune::tracker
