// The Tracker service's calls besides Measure: Status, BestRecords and ReloadCredentials.
#include "support/log.h"
#include "tracker/tuning_service.h"

namespace tensortune::tracker {

grpc::Status TuningService::Status(grpc::ServerContext* ctx, const v1::StatusRequest*,
                                   v1::StatusReply* reply) {
  if (auto s = core_.authorize(*ctx, "Status", kRoleClient); !s.ok()) return s;
  *reply = core_.dispatcher->status();
  if (auto n = core_.archive->result_count()) reply->set_archived_results(*n);
  reply->set_security_warning(core_.security_warning);
  return grpc::Status::OK;
}

grpc::Status TuningService::BestRecords(grpc::ServerContext* ctx, const v1::BestRecordsRequest* req,
                                        v1::BestRecordsReply* reply) {
  if (auto s = core_.authorize(*ctx, "BestRecords", kRoleClient); !s.ok()) return s;
  const bool filtered = !req->template_name().empty() || !req->shape().empty() ||
                        req->workload_keys_size() > 0 || req->threads() != 0 || req->since() != 0 ||
                        req->until() != 0 || req->top_k() > 1 || req->exclude_devices_size() > 0;
  if (req->workload_keys_size() > 10000)
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "workload_keys has " + std::to_string(req->workload_keys_size()) +
                            " entries, at most 10000");
  Expected<std::vector<records::BestRecord>> best = std::vector<records::BestRecord>{};
  if (filtered) {
    records::RecordStore::BestQuery q;
    q.device_key = req->device_key();
    q.template_name = req->template_name();
    q.shape = req->shape();
    q.workload_keys.assign(req->workload_keys().begin(), req->workload_keys().end());
    q.threads = req->threads();
    q.since = req->since();
    q.until = req->until();
    q.top_k = std::max(1, req->top_k());
    q.exclude_devices.assign(req->exclude_devices().begin(), req->exclude_devices().end());
    best = core_.archive->query_best(q);
    if (!best && best.error().code == ErrorCode::kInvalidArgument)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, best.error().message);
  } else {
    best = core_.archive->best_all();
  }
  if (!best) return grpc::Status(grpc::StatusCode::INTERNAL, best.error().message);
  for (const auto& b : *best) {
    if (!req->device_key().empty() && b.record.result.device_key != req->device_key()) continue;
    auto* r = reply->add_records();
    r->set_workload_key(b.record.task.workload_key);
    r->set_template_name(b.record.task.template_name);
    r->set_target(b.record.task.target);
    r->set_device_key(b.record.result.device_key);
    r->set_config_index(b.record.config_index);
    r->set_entity_json(b.record.entity_json);
    r->set_mean_cost_s(b.record.result.mean_cost());
    r->set_gflops(b.gflops);
    r->set_measured(b.measured);
    r->set_threads(b.record.result.threads);
    r->set_device(b.record.device);
    r->set_client(b.record.client);
  }
  return grpc::Status::OK;
}

grpc::Status TuningService::ReloadCredentials(grpc::ServerContext* ctx,
                                              const v1::ReloadCredentialsRequest*,
                                              v1::ReloadCredentialsReply* reply) {
  Caller caller;
  if (auto s = core_.authorize(*ctx, "ReloadCredentials", kRoleAdmin, &caller); !s.ok()) return s;
  auto ended = core_.reload_tokens_file();
  if (!ended) {
    logger("tracker")->error(
        "ReloadCredentials from {}: not reloaded, the old credentials stay: {}", caller.account(),
        ended.error().message);
    return grpc::Status(ended.error().code == ErrorCode::kInvalidArgument
                            ? grpc::StatusCode::INVALID_ARGUMENT
                            : grpc::StatusCode::FAILED_PRECONDITION,
                        ended.error().message + " (the old credentials stay)");
  }
  logger("tracker")->info("ReloadCredentials from {}: {} reloaded, {} session(s) ended",
                          caller.account(), core_.options.tokens_file, *ended);
  reply->set_credentials(core_.credential_count());
  reply->set_sessions_ended(*ended);
  return grpc::Status::OK;
}

}  // namespace tensortune::tracker
