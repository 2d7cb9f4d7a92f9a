// The Tracker service's Measure: one tuning client's job, from request checks to the last
// result written back.
#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "proto/convert.h"
#include "proto/rpc_channel.h"
#include "support/log.h"
#include "tracker/tuning_service.h"

namespace tensortune::tracker {

namespace ss = schedule_space;

namespace {

/// A call refused before it became a job.
class RefusedCall final : public grpc::ServerWriteReactor<v1::MeasureJobUpdate> {
 public:
  explicit RefusedCall(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

/// A checked request, ready for the dispatcher.
struct PreparedJob {
  JobSpec spec;
  std::map<int, ss::MeasureResult> archived;  ///< index -> result already in the archive
  int total = 0;
  std::string template_name;
};

/// A layout transform to time for the graph tuner: one item, its single config, nothing
/// archived (the client keeps transform times in its own DB).
grpc::Status prepare_transform_job(const v1::MeasureJobRequest& req, PreparedJob* job) {
  const v1::MeasureRequest& m = req.request();
  auto transform = wire::layout_transform_from_proto(m.workload());
  if (!transform) return invalid_argument_status(transform.error().with_context("request"));
  if (m.configs_size() != 1 || m.configs(0).index() != 0 || m.configs(0).entity_size() != 0)
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "request.configs: a layout transform has one config, index 0 with no "
                        "knobs");
  job->spec.name = req.job_name().substr(0, 128);
  job->spec.device_key = m.device_key();
  job->spec.priority = req.priority();
  v1::WorkItem w;
  *w.mutable_workload() = m.workload();
  *w.mutable_target() = m.target();
  *w.mutable_config() = m.configs(0);
  *w.mutable_timing() = m.timing();
  job->spec.items.push_back(std::move(w));
  job->total = 1;
  job->template_name = wire::kLayoutTransformName;
  return grpc::Status::OK;
}

/// The job's built kernels, checked, each stamped with the credential that sent it; none
/// when the request has none.
grpc::Status prepare_kernels(const v1::MeasureJobRequest& req, const Caller& caller,
                             std::vector<v1::KernelBinary>* kernels) {
  if (req.kernels_size() == 0) return grpc::Status::OK;
  if (!(caller.roles & kRoleBuilder))
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "Measure with built kernels needs a credential with the builder role; '" +
                            caller.name + "' is " + role_names(caller.roles) +
                            " (give it client+builder in the tracker's tokens file, or let the "
                            "devices build: --build-workers 0)");
  if (req.request().workload().has_layout_transform())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "kernels: a layout transform takes no built kernel");
  if (req.kernels_size() != req.request().configs_size())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "kernels has " + std::to_string(req.kernels_size()) +
                            " entries; give none or one per config (" +
                            std::to_string(req.request().configs_size()) + ")");
  for (int i = 0; i < req.kernels_size(); ++i) {
    auto k = wire::kernel_binary_from_proto(req.kernels(i));
    if (!k)
      return invalid_argument_status(k.error().with_context("kernels[" + std::to_string(i) + "]"));
    k->built_by = caller.name.empty() ? caller.account() : caller.name;
    wire::kernel_binary_to_proto(*k, &kernels->emplace_back());
  }
  return grpc::Status::OK;
}

grpc::Status prepare_job(const ServerCore& core, const v1::MeasureJobRequest& req,
                         const Caller& caller, PreparedJob* job) {
  const std::string client = caller.account();
  const v1::MeasureRequest& m = req.request();
  if (auto s = check_device_key("request.device_key", m.device_key()); !s.ok()) return s;
  if (m.configs_size() < 1 || m.configs_size() > 10000)
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        "request.configs has " + std::to_string(m.configs_size()) + " entries, must be 1..10000");
  if (auto s = wire::validate_timing(m.timing()); !s.has_value())
    return invalid_argument_status(s.error().with_context("request"));
  std::vector<v1::KernelBinary> kernels;
  if (auto s = prepare_kernels(req, caller, &kernels); !s.ok()) return s;
  if (m.workload().has_layout_transform()) return prepare_transform_job(req, job);
  auto task = wire::task_from_proto(m.workload(), m.target());
  if (!task) return invalid_argument_status(task.error().with_context("request"));
  auto space_or = ss::make_config_space(*task);
  if (!space_or) return invalid_argument_status(space_or.error());
  auto space = std::make_shared<const ss::ConfigSpace>(std::move(space_or).value());
  JobRecordInfo info;
  info.space = space;
  info.name = req.job_name().substr(0, 128);
  info.client = client;
  for (int i = 0; i < m.configs_size(); ++i) {
    auto c = wire::config_from_proto(*space, m.configs(i));
    if (!c)
      return invalid_argument_status(
          c.error().with_context("request.configs[" + std::to_string(i) + "]"));
    info.configs.push_back(*c);
  }
  // A build job (the builder servers' key) makes kernels, not timings: nothing to archive.
  const bool builds = m.device_key() == wire::kBuilderKey;
  if (builds && !kernels.empty())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "kernels: a job on key '" + std::string(wire::kBuilderKey) +
                            "' builds its configs; it takes no built kernel");
  std::map<int64_t, ss::MeasureResult> none;
  Expected<std::map<int64_t, ss::MeasureResult>> recorded = none;
  if (!builds) {
    auto task_id = core.archive->task_id(*task, *space);
    if (!task_id) return grpc::Status(grpc::StatusCode::INTERNAL, task_id.error().message);
    info.task_id = *task_id;
    // A result timed on another thread count is not this job's answer.
    recorded = core.archive->recorded(*task_id, m.device_key(), std::max(1, m.timing().threads()));
    if (!recorded) return grpc::Status(grpc::StatusCode::INTERNAL, recorded.error().message);
  }

  job->spec.name = info.name;
  job->spec.device_key = m.device_key();
  job->spec.priority = req.priority();
  const ss::Template* tmpl = ss::find_template(task->template_name);
  for (size_t i = 0; i < info.configs.size(); ++i) {
    job->spec.min_flop.push_back(tmpl && !builds ? tmpl->fewest_flop(*task, *space, info.configs[i])
                                                 : 0);
    v1::WorkItem w;
    *w.mutable_workload() = m.workload();
    *w.mutable_target() = m.target();
    wire::config_to_proto(*space, info.configs[i], w.mutable_config());
    *w.mutable_timing() = m.timing();
    if (!kernels.empty()) *w.mutable_kernel() = std::move(kernels[i]);
    job->spec.items.push_back(std::move(w));
    if (auto r = recorded->find(info.configs[i].index); r != recorded->end())
      job->archived[static_cast<int>(i)] = r->second;
  }
  if (!builds) job->spec.record_context = std::make_shared<const JobRecordInfo>(std::move(info));
  job->total = m.configs_size();
  job->template_name = task->template_name;
  return grpc::Status::OK;
}

class MeasureJobReactor;

}  // namespace

/// One Measure call's state, shared by its reactor (gRPC's threads), the job's sink (device
/// threads) and the housekeeping thread; everything under `mu_`. Updates are written one at a
/// time in order of arrival; the call finishes after the last one, or when the client goes
/// away, or when no device of the key has been seen for the no-device timeout.
class MeasureJobStream {
 public:
  /// `to_measure` items were admitted against the quotas of `account` (the rest come from the
  /// archive); they are given back as they complete, the rest when the call ends.
  MeasureJobStream(ServerCore& core, grpc::CallbackServerContext* ctx, std::string device_key,
                   int total, std::string account, int to_measure)
      : core_(core),
        ctx_(ctx),
        device_key_(std::move(device_key)),
        total_(total),
        account_(std::move(account)),
        quota_items_left_(to_measure),
        last_device_seen_(Clock::now()) {}

  /// The credential session that revocation ends (0: none); removed when the call ends.
  void set_session(uint64_t session) {
    std::lock_guard<std::mutex> lock(mu_);
    session_ = session;
  }

  /// The caller's credential was revoked: the job's queued items are dropped and the call
  /// fails; items already on devices still finish and are archived.
  void revoke(const std::string& credential) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    drop_job_locked("its credential was revoked");
    finish_locked(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                               "credential '" + credential +
                                   "' was revoked: the job ended (results measured so far are "
                                   "archived)"));
  }

  void attach(grpc::ServerWriteReactor<v1::MeasureJobUpdate>* reactor) {
    std::lock_guard<std::mutex> lock(mu_);
    reactor_ = reactor;
  }

  /// The dispatcher's id for the job; writes wait for it (results may arrive during submit).
  void start(uint64_t job_id) {
    std::lock_guard<std::mutex> lock(mu_);
    job_id_ = job_id;
    started_ = true;
    if (finished_) {
      core_.dispatcher->cancel_job(job_id_);
      return;
    }
    pump_locked();
  }

  void deliver(v1::MeasureJobUpdate update) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!update.from_archive() && !quota_released_ && quota_items_left_ > 0) {
      --quota_items_left_;
      core_.quotas.item_done(account_);
    }
    if (finished_) return;
    queue_.push_back(std::move(update));
    pump_locked();
  }

  void write_done(bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      drop_job_locked("the stream broke");
      finish_locked(grpc::Status::CANCELLED);
      return;
    }
    ++written_;
    pump_locked();
  }

  void cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    drop_job_locked("client went away");
    finish_locked(grpc::Status::CANCELLED);
  }

  /// The reactor is gone (gRPC's OnDone): nothing may touch it or the context any more.
  void done() {
    uint64_t session = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      reactor_ = nullptr;
      ctx_ = nullptr;
      if (!quota_released_) core_.quotas.job_done(account_, quota_items_left_);
      quota_released_ = true;
      session = std::exchange(session_, 0);
    }
    if (session) core_.remove_session(session);
  }

  void check_devices(Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_ || !started_) return;
    if (core_.dispatcher->devices_for_key(device_key_) > 0) {
      last_device_seen_ = now;
      return;
    }
    const double timeout = core_.options.no_device_timeout_s;
    if (std::chrono::duration<double>(now - last_device_seen_).count() <= timeout) return;
    core_.dispatcher->cancel_job(job_id_);
    logger("tracker")->warn("job {}: no device with key '{}' for {:.0f} s; failed", job_id_,
                            device_key_, timeout);
    // Tells the client that the tracker itself decided (retrying cannot help), unlike an
    // UNAVAILABLE from a tracker that cannot be reached.
    ctx_->AddTrailingMetadata(std::string(wire::kJobVerdictKey), "no-device");
    finish_locked(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                               "no device with key '" + device_key_ + "' has been registered for " +
                                   std::to_string(static_cast<int>(timeout)) +
                                   " s (see `tensortune status`)"));
  }

 private:
  void pump_locked() {
    if (writing_ || finished_ || !started_) return;
    if (queue_.empty()) {
      if (written_ >= total_) finish_locked(grpc::Status::OK);
      return;
    }
    current_ = std::move(queue_.front());
    queue_.pop_front();
    current_.set_job_id(job_id_);
    writing_ = true;
    reactor_->StartWrite(&current_);
  }

  void drop_job_locked(const char* why) {
    if (!started_) return;  // start() cancels it
    core_.dispatcher->cancel_job(job_id_);
    logger("tracker")->info("job {}: {}; queued items dropped", job_id_, why);
  }

  void finish_locked(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    if (reactor_) reactor_->Finish(status);
  }

  ServerCore& core_;
  grpc::CallbackServerContext* ctx_;
  const std::string device_key_;
  const int total_;
  const std::string account_;
  std::mutex mu_;
  int quota_items_left_;
  bool quota_released_ = false;
  uint64_t session_ = 0;
  grpc::ServerWriteReactor<v1::MeasureJobUpdate>* reactor_ = nullptr;
  std::deque<v1::MeasureJobUpdate> queue_;
  v1::MeasureJobUpdate current_;  ///< the update being written (gRPC holds a pointer to it)
  bool writing_ = false, finished_ = false, started_ = false;
  int written_ = 0;
  uint64_t job_id_ = 0;
  Clock::time_point last_device_seen_;
};

namespace {

class MeasureJobReactor final : public grpc::ServerWriteReactor<v1::MeasureJobUpdate> {
 public:
  explicit MeasureJobReactor(std::shared_ptr<MeasureJobStream> stream)
      : stream_(std::move(stream)) {}
  void OnWriteDone(bool ok) override { stream_->write_done(ok); }
  void OnCancel() override { stream_->cancelled(); }
  void OnDone() override {
    stream_->done();
    delete this;
  }

 private:
  std::shared_ptr<MeasureJobStream> stream_;
};

}  // namespace

TuningService::~TuningService() = default;

grpc::ServerWriteReactor<v1::MeasureJobUpdate>* TuningService::Measure(
    grpc::CallbackServerContext* ctx, const v1::MeasureJobRequest* req) {
  Caller caller;
  if (auto s = core_.authorize(*ctx, "Measure", kRoleClient, &caller); !s.ok())
    return new RefusedCall(s);
  const std::string& credential = caller.name;
  const std::string account = caller.account();
  PreparedJob job;
  if (auto s = prepare_job(core_, *req, caller, &job); !s.ok()) return new RefusedCall(s);
  job.spec.client = account;
  const int to_measure = job.total - static_cast<int>(job.archived.size());
  if (auto refusal = core_.quotas.admit(account, job.total, to_measure, Clock::now())) {
    logger("tracker")->warn("job '{}' from {}: RESOURCE_EXHAUSTED: {}", req->job_name(),
                            ctx->peer(), refusal->message);
    // Tells the client whether waiting helps (it retries) or the request must change.
    ctx->AddTrailingMetadata(std::string(wire::kQuotaVerdictKey),
                             refusal->transient ? "wait" : "resize");
    return new RefusedCall(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, refusal->message));
  }

  auto stream = std::make_shared<MeasureJobStream>(core_, ctx, job.spec.device_key, job.total,
                                                   account, to_measure);
  auto* reactor = new MeasureJobReactor(stream);
  stream->attach(reactor);
  if (!caller.token.empty()) {
    std::weak_ptr<MeasureJobStream> weak = stream;
    stream->set_session(
        core_.add_session({credential, caller.token, kRoleClient, [weak, credential] {
                             if (auto s = weak.lock()) s->revoke(credential);
                           }}));
  }
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    std::erase_if(jobs_, [](const auto& j) { return j.expired(); });
    jobs_.push_back(stream);
  }
  std::set<int> archived_indices;
  for (const auto& [i, r] : job.archived) archived_indices.insert(i);
  auto sink = [stream, archived = std::move(archived_indices)](int index,
                                                               const ss::MeasureResult& r) {
    v1::MeasureJobUpdate u;
    u.set_index(index);
    wire::result_to_proto(r, u.mutable_result());
    u.set_from_archive(archived.count(index) != 0);
    stream->deliver(std::move(u));
  };
  const std::string key = job.spec.device_key;
  const uint64_t job_id = core_.dispatcher->submit(std::move(job.spec), sink, job.archived);
  logger("tracker")->info("job {} '{}' from {}{}: {} configs of {} on {} ({} from the archive)",
                          job_id, req->job_name(), credential.empty() ? "" : credential + "@",
                          ctx->peer(), job.total, job.template_name, key, job.archived.size());
  stream->start(job_id);
  return reactor;
}

void TuningService::check_devices(Clock::time_point now) {
  std::vector<std::shared_ptr<MeasureJobStream>> live;
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    std::erase_if(jobs_, [](const auto& j) { return j.expired(); });
    for (const auto& j : jobs_)
      if (auto s = j.lock()) live.push_back(std::move(s));
  }
  for (const auto& s : live) s->check_devices(now);
}

}  // namespace tensortune::tracker
