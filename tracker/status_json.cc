#include "tracker/status_json.h"

#include <nlohmann/json.hpp>

namespace tensortune::tracker {

nlohmann::json status_to_json(const v1::StatusReply& s) {
  using json = nlohmann::json;
  json j;
  j["uptime_s"] = s.uptime_s();
  j["archived_results"] = s.archived_results();
  if (!s.security_warning().empty()) j["security_warning"] = s.security_warning();
  j["devices"] = json::array();
  for (const auto& d : s.devices())
    j["devices"].push_back({{"id", d.device_id()},
                            {"key", d.device_key()},
                            {"name", d.name()},
                            {"slots", d.slots()},
                            {"busy", d.busy()},
                            {"timing_fraction", d.timing_fraction()},
                            {"last_heartbeat_age_s", d.last_heartbeat_age_s()},
                            {"hardware", d.hardware()}});
  j["queues"] = json::array();
  for (const auto& q : s.queues())
    j["queues"].push_back({{"key", q.device_key()},
                           {"devices", q.devices()},
                           {"slots", q.slots()},
                           {"free", q.free_slots()},
                           {"queued", q.queued()},
                           {"running", q.running()}});
  j["jobs"] = json::array();
  for (const auto& job : s.jobs()) {
    // The rest at the pace so far; unknown until the first result.
    json eta = nullptr;
    if (!job.finished() && job.done() > 0)
      eta = job.age_s() * (job.total() - job.done()) / job.done();
    j["jobs"].push_back({{"id", job.job_id()},
                         {"name", job.name()},
                         {"client", job.client()},
                         {"key", job.device_key()},
                         {"priority", job.priority()},
                         {"total", job.total()},
                         {"queued", job.queued()},
                         {"running", job.running()},
                         {"done", job.done()},
                         {"failed", job.failed()},
                         {"finished", job.finished()},
                         {"age_s", job.age_s()},
                         {"finished_age_s", job.finished_age_s()},
                         {"eta_s", eta}});
  }
  return j;
}

}  // namespace tensortune::tracker
