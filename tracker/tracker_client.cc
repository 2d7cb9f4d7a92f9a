#include "tracker/tracker_client.h"

#include <chrono>
#include <optional>
#include <thread>

#include "proto/convert.h"
#include "support/log.h"

namespace tensortune::tracker {

namespace ss = schedule_space;

TrackerClient::TrackerClient(wire::TrackerEndpoint endpoint, std::shared_ptr<grpc::Channel> channel)
    : endpoint_(std::move(endpoint)),
      channel_(std::move(channel)),
      stub_(v1::Tracker::NewStub(channel_)) {}

Expected<std::unique_ptr<TrackerClient>> TrackerClient::connect(const wire::TrackerEndpoint& e) {
  TT_ASSIGN_OR_RETURN(auto channel, wire::make_tracker_channel(e));
  return std::unique_ptr<TrackerClient>(new TrackerClient(e, std::move(channel)));
}

Error TrackerClient::rpc_error(const char* rpc, const grpc::Status& status) const {
  const std::string text =
      "tracker " + endpoint_.address + " " + rpc + ": " + wire::describe(status);
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      return invalid_argument(text);
    case grpc::StatusCode::UNAVAILABLE:
      return unavailable(text);
    default:
      return Error{ErrorCode::kFailedPrecondition, text};
  }
}

namespace {

v1::MeasureJobRequest job_request(const FarmTiming& timing, const std::string& device_key,
                                  const std::string& job_name, int priority) {
  v1::MeasureJobRequest req;
  req.set_job_name(job_name);
  req.set_priority(priority);
  auto* m = req.mutable_request();
  auto* t = m->mutable_timing();
  t->set_number(timing.number);
  t->set_repeat(timing.repeat);
  t->set_min_repeat_ms(timing.min_repeat_ms);
  t->set_timeout_s(timing.timeout_s);
  t->set_flush_cache(timing.flush_cache);
  t->set_threads(timing.threads);
  m->set_device_key(device_key);
  return req;
}

}  // namespace

Expected<std::vector<ss::MeasureResult>> TrackerClient::measure(
    const ss::Task& task, const ss::ConfigSpace& space, const std::vector<ss::Config>& configs,
    const FarmTiming& timing, const std::string& device_key, const std::string& job_name,
    int priority, const std::function<void(int, const ss::MeasureResult&, bool)>& on_result) {
  v1::MeasureJobRequest req = job_request(timing, device_key, job_name, priority);
  auto* m = req.mutable_request();
  wire::task_to_proto(task, m->mutable_workload(), m->mutable_target());
  for (const auto& c : configs) wire::config_to_proto(space, c, m->add_configs());
  return run_job(req, on_result);
}

Expected<std::vector<ss::MeasureResult>> TrackerClient::measure_built(
    const ss::Task& task, const ss::ConfigSpace& space, const std::vector<ss::Config>& configs,
    const std::vector<ss::KernelBinary>& kernels, const FarmTiming& timing,
    const std::string& device_key, const std::string& job_name, int priority) {
  if (kernels.size() != configs.size())
    return invalid_argument(std::to_string(kernels.size()) + " kernels for " +
                            std::to_string(configs.size()) + " configs");
  // A job's request stays under half the message limit (kernels of fully unrolled configs
  // run to hundreds of KiB each), so a batch may become several jobs in a row.
  const size_t budget = static_cast<size_t>(endpoint_.max_message_bytes) / 2;
  std::vector<ss::MeasureResult> results;
  results.reserve(configs.size());
  for (size_t begin = 0; begin < configs.size();) {
    v1::MeasureJobRequest req = job_request(timing, device_key, job_name, priority);
    auto* m = req.mutable_request();
    wire::task_to_proto(task, m->mutable_workload(), m->mutable_target());
    size_t bytes = 0, end = begin;
    while (end < configs.size() && (end == begin || bytes + kernels[end].code.size() < budget)) {
      bytes += kernels[end].code.size();
      wire::config_to_proto(space, configs[end], m->add_configs());
      wire::kernel_binary_to_proto(kernels[end], req.add_kernels());
      ++end;
    }
    TT_ASSIGN_OR_RETURN(auto part, run_job(req, {}));
    for (auto& r : part) results.push_back(std::move(r));
    begin = end;
  }
  return results;
}

Expected<ss::MeasureResult> TrackerClient::measure_layout_transform(
    const ss::LayoutTransformWorkload& transform, const ss::Target& target,
    const FarmTiming& timing, const std::string& device_key, const std::string& job_name) {
  v1::MeasureJobRequest req = job_request(timing, device_key, job_name, 0);
  auto* m = req.mutable_request();
  wire::layout_transform_to_proto(transform, m->mutable_workload());
  m->mutable_target()->set_spec(target.spec);
  m->mutable_target()->set_vector_lanes(target.vector_lanes);
  m->add_configs()->set_index(0);
  TT_ASSIGN_OR_RETURN(auto results, run_job(req, {}));
  return std::move(results.front());
}

Expected<std::vector<ss::MeasureResult>> TrackerClient::run_job(
    const v1::MeasureJobRequest& req,
    const std::function<void(int, const ss::MeasureResult&, bool)>& on_result) {
  // A quota that waiting can satisfy (running jobs, queued items, jobs per minute): wait our
  // turn, as a client that shares a farm should, instead of failing the tuning run.
  auto wait = std::chrono::milliseconds(500);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(30);
  bool warned = false;
  for (;;) {
    bool quota_wait = false;
    auto r = run_job_once(req, on_result, &quota_wait);
    if (r || !quota_wait || std::chrono::steady_clock::now() + wait > give_up) return r;
    if (!warned) {
      logger("farm")->warn("{}; waiting for the quota (retrying every few seconds)",
                           r.error().message);
      warned = true;
    }
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::milliseconds(8000));
  }
}

Expected<std::vector<ss::MeasureResult>> TrackerClient::run_job_once(
    const v1::MeasureJobRequest& req,
    const std::function<void(int, const ss::MeasureResult&, bool)>& on_result, bool* quota_wait) {
  const std::string& job_name = req.job_name();
  const size_t count = static_cast<size_t>(req.request().configs_size());
  grpc::ClientContext ctx;
  wire::add_token(ctx, endpoint_.token);
  auto reader = stub_->Measure(&ctx, req);
  std::vector<std::optional<ss::MeasureResult>> results(count);
  v1::MeasureJobUpdate u;
  size_t received = 0;
  while (reader->Read(&u)) {
    if (u.index() < 0 || u.index() >= static_cast<int>(count) || results[u.index()]) continue;
    auto r = wire::result_from_proto(u.result());
    if (!r) return r.error().with_context("tracker " + endpoint_.address + " sent a bad result");
    if (on_result) on_result(u.index(), *r, u.from_archive());
    results[u.index()] = std::move(r).value();
    ++received;
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) {
    const auto& trailers = ctx.GetServerTrailingMetadata();
    if (auto q = trailers.find(wire::kQuotaVerdictKey);
        q != trailers.end() && q->second == "wait" && received == 0)
      *quota_wait = true;
    if (trailers.find(wire::kJobVerdictKey) != trailers.end())
      return Error{
          ErrorCode::kFailedPrecondition,
          "tracker " + endpoint_.address + " failed job '" + job_name + "': " + wire::describe(s)};
    return rpc_error("Measure", s);
  }
  if (received != count)
    return unavailable("tracker " + endpoint_.address + " ended job '" + job_name + "' after " +
                       std::to_string(received) + " of " + std::to_string(count) + " results");
  std::vector<ss::MeasureResult> out;
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

bool TrackerClient::wait_for_tracker(double seconds) {
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(seconds));
  // WaitForConnected starts a connection attempt itself (the channel's reconnect backoff is
  // short: wire::make_channel).
  return channel_->WaitForConnected(deadline);
}

Expected<v1::StatusReply> TrackerClient::status() {
  grpc::ClientContext ctx;
  wire::add_token(ctx, endpoint_.token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::StatusReply reply;
  grpc::Status s = stub_->Status(&ctx, v1::StatusRequest(), &reply);
  if (!s.ok()) return rpc_error("Status", s);
  return reply;
}

Expected<v1::BestRecordsReply> TrackerClient::best_records(const v1::BestRecordsRequest& req) {
  grpc::ClientContext ctx;
  wire::add_token(ctx, endpoint_.token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::BestRecordsReply reply;
  grpc::Status s = stub_->BestRecords(&ctx, req, &reply);
  if (!s.ok()) return rpc_error("BestRecords", s);
  return reply;
}

Expected<v1::ReloadCredentialsReply> TrackerClient::reload_credentials() {
  grpc::ClientContext ctx;
  wire::add_token(ctx, endpoint_.token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::ReloadCredentialsReply reply;
  grpc::Status s = stub_->ReloadCredentials(&ctx, v1::ReloadCredentialsRequest(), &reply);
  if (!s.ok()) return rpc_error("ReloadCredentials", s);
  return reply;
}

}  // namespace tensortune::tracker
