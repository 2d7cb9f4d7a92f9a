#include "tracker/tracker_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <regex>
#include <thread>

#include "proto/convert.h"
#include "proto/farm.grpc.pb.h"
#include "proto/rpc_channel.h"
#include "schedule_space/config_space.h"
#include "support/log.h"
#include "tracker/archive.h"

namespace tensortune::tracker {

namespace ss = schedule_space;

namespace {

grpc::Status invalid(const Error& e) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, e.message);
}

// Constant-time comparison, so the token cannot be guessed byte by byte from timings.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string peer_of(const grpc::ServerContext* ctx) { return ctx->peer(); }

// gRPC says only that it could not bind; a plain bind() of the same address says why.
std::string bind_failure(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || !found)
    return "'" + host + "' is not an address of this machine";
  std::string why = "unknown reason";
  const int fd = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (fd >= 0) {
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
      why = errno == EADDRINUSE ? "port " + service + " is in use (another tracker?)"
                                : std::strerror(errno);
    } else {
      why = "gRPC could not bind it (not a local address?)";
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return why;
}

// Device keys name queues and appear in tables and logs: a short, plain token.
grpc::Status check_device_key(const std::string& field, const std::string& key) {
  static const std::regex key_re("[A-Za-z0-9._-]{1,64}");
  if (std::regex_match(key, key_re)) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      field + " = '" + key.substr(0, 80) +
                          "' must be 1-64 letters, digits, '.', '_' or '-'");
}

}  // namespace

struct JobRecordInfo {
  int64_t task_id = 0;
  std::shared_ptr<const ss::ConfigSpace> space;
  std::vector<ss::Config> configs;
  std::string name;
};

struct TrackerServer::Impl : public v1::DeviceLink::Service, public v1::Tracker::Service {
  TrackerOptions options;
  std::unique_ptr<Archive> archive;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<grpc::Server> server;
  int bound_port = 0;
  std::thread housekeeping;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;

  grpc::Status authorize(const grpc::ServerContext* ctx, const char* rpc) {
    if (options.token.empty()) return grpc::Status::OK;
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    if (it == md.end()) {
      logger("tracker")->warn("{} from {}: no token: UNAUTHENTICATED", rpc, peer_of(ctx));
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "missing token: pass --token-file with the tracker's token");
    }
    const std::string value(it->second.data(), it->second.size());
    if (value.rfind("Bearer ", 0) != 0 || !same_token(value.substr(7), options.token)) {
      logger("tracker")->warn("{} from {}: wrong token: UNAUTHENTICATED", rpc, peer_of(ctx));
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong token");
    }
    return grpc::Status::OK;
  }

  void record(const std::shared_ptr<const void>& context, int index,
              const ss::MeasureResult& result) {
    const auto& info = *static_cast<const JobRecordInfo*>(context.get());
    ::tensortune::Status s = archive->record(info.task_id, *info.space, info.configs[index], result, info.name);
    if (!s) logger("tracker")->error("archive write failed for job '{}' index {}: {}", info.name,
                                     index, s.error().message);
  }

  // --- DeviceLink ---------------------------------------------------------------------
  grpc::Status Connect(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<v1::TrackerMessage, v1::DeviceMessage>* stream) override {
    if (auto s = authorize(ctx, "Connect"); !s.ok()) return s;
    v1::DeviceMessage first;
    if (!stream->Read(&first)) return grpc::Status(grpc::StatusCode::CANCELLED, "no Register");
    if (!first.has_register_())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message must be Register");
    const v1::Register& reg = first.register_();
    if (auto s = check_device_key("register.device_key", reg.device_key()); !s.ok()) return s;
    if (reg.slots() < 1 || reg.slots() > 256)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "register.slots = " + std::to_string(reg.slots()) + ", must be 1..256");
    // The dispatcher may call `send` from another thread just as this stream ends; the
    // stream object dies when this handler returns, so sends check `closed` under the lock.
    struct Link {
      std::mutex mu;
      bool closed = false;
    };
    auto link = std::make_shared<Link>();
    auto write_mu = std::shared_ptr<std::mutex>(link, &link->mu);
    auto send = [stream, link](const v1::WorkItem& work) {
      v1::TrackerMessage m;
      *m.mutable_work() = work;
      std::lock_guard<std::mutex> lock(link->mu);
      return !link->closed && stream->Write(m);
    };
    const std::string name = reg.name().substr(0, 256).empty() ? peer_of(ctx) : reg.name().substr(0, 256);
    {
      v1::TrackerMessage hello;
      hello.mutable_registered()->set_heartbeat_interval_s(options.dispatcher.heartbeat_timeout_s / 3);
      std::lock_guard<std::mutex> lock(*write_mu);
      // The id is sent after add_device; a device treats Registered as "you are in".
      if (!stream->Write(hello)) return grpc::Status::CANCELLED;
    }
    const uint64_t id = dispatcher->add_device(reg.device_key(), reg.slots(), name, send,
                                               [ctx, link] {
                                                 std::lock_guard<std::mutex> lock(link->mu);
                                                 if (!link->closed) ctx->TryCancel();
                                               });
    v1::DeviceMessage msg;
    while (stream->Read(&msg)) {
      if (msg.has_heartbeat()) {
        dispatcher->heartbeat(id);
      } else if (msg.has_result()) {
        const auto& r = msg.result();
        auto result = wire::result_from_proto(r.result());
        if (!result) {
          // A device that answers garbage costs the item an error code, not a crash.
          logger("tracker")->warn("device {} '{}' sent an invalid result for item {}: {}", id,
                                  name, r.item_id(), result.error().message);
          ss::MeasureResult bad;
          bad.config_index = r.result().config_index();
          bad.costs = {ss::kErrorCost};
          bad.error_no = ss::MeasureErrorNo::kUnknownError;
          bad.error_msg = "device '" + name + "' sent an invalid result: " + result.error().message;
          bad.device_key = reg.device_key();
          dispatcher->complete(id, r.item_id(), r.lease_id(), std::move(bad));
        } else {
          result->device_key = reg.device_key();
          dispatcher->complete(id, r.item_id(), r.lease_id(), std::move(result).value());
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(link->mu);
      link->closed = true;
    }
    dispatcher->remove_device(id);
    return grpc::Status::OK;
  }

  // --- Tracker ------------------------------------------------------------------------
  grpc::Status Measure(grpc::ServerContext* ctx, const v1::MeasureJobRequest* req,
                       grpc::ServerWriter<v1::MeasureJobUpdate>* writer) override {
    if (auto s = authorize(ctx, "Measure"); !s.ok()) return s;
    const v1::MeasureRequest& m = req->request();
    if (auto s = check_device_key("request.device_key", m.device_key()); !s.ok()) return s;
    if (m.configs_size() < 1 || m.configs_size() > 10000)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "request.configs has " + std::to_string(m.configs_size()) +
                              " entries, must be 1..10000");
    auto task = wire::task_from_proto(m.workload(), m.target());
    if (!task) return invalid(task.error().with_context("request"));
    if (auto s = wire::validate_timing(m.timing()); !s.has_value()) return invalid(s.error().with_context("request"));
    auto space_or = ss::make_config_space(*task);
    if (!space_or) return invalid(space_or.error());
    auto space = std::make_shared<const ss::ConfigSpace>(std::move(space_or).value());
    JobRecordInfo info;
    info.space = space;
    info.name = req->job_name().substr(0, 128);
    for (int i = 0; i < m.configs_size(); ++i) {
      auto c = wire::config_from_proto(*space, m.configs(i));
      if (!c) return invalid(c.error().with_context("request.configs[" + std::to_string(i) + "]"));
      info.configs.push_back(*c);
    }
    auto task_id = archive->task_id(*task, *space);
    if (!task_id) return grpc::Status(grpc::StatusCode::INTERNAL, task_id.error().message);
    info.task_id = *task_id;
    auto recorded = archive->recorded(*task_id, m.device_key());
    if (!recorded) return grpc::Status(grpc::StatusCode::INTERNAL, recorded.error().message);

    JobSpec spec;
    spec.name = info.name;
    spec.device_key = m.device_key();
    spec.priority = req->priority();
    std::map<int, ss::MeasureResult> done;
    for (size_t i = 0; i < info.configs.size(); ++i) {
      v1::WorkItem w;
      *w.mutable_workload() = m.workload();
      *w.mutable_target() = m.target();
      wire::config_to_proto(*space, info.configs[i], w.mutable_config());
      *w.mutable_timing() = m.timing();
      spec.items.push_back(std::move(w));
      if (auto r = recorded->find(info.configs[i].index); r != recorded->end())
        done[static_cast<int>(i)] = r->second;
    }

    // Results arrive on device threads; this handler thread writes them in order of arrival.
    struct Inbox {
      std::mutex mu;
      std::condition_variable cv;
      std::deque<v1::MeasureJobUpdate> updates;
    };
    auto inbox = std::make_shared<Inbox>();
    auto archived = std::make_shared<std::set<int>>();
    for (const auto& [i, r] : done) archived->insert(i);
    const int total = m.configs_size();
    auto sink = [inbox, archived](int index, const ss::MeasureResult& r) {
      v1::MeasureJobUpdate u;
      u.set_index(index);
      wire::result_to_proto(r, u.mutable_result());
      u.set_from_archive(archived->count(index) != 0);
      std::lock_guard<std::mutex> lock(inbox->mu);
      inbox->updates.push_back(std::move(u));
      inbox->cv.notify_one();
    };
    spec.record_context = std::make_shared<const JobRecordInfo>(std::move(info));
    const uint64_t job_id = dispatcher->submit(std::move(spec), sink, done);
    logger("tracker")->info("job {} '{}' from {}: {} configs of {} on {} ({} from the archive)",
                            job_id, req->job_name(), peer_of(ctx), total, task->template_name,
                            m.device_key(), done.size());
    int written = 0;
    auto last_device_seen = Clock::now();
    while (written < total) {
      if (dispatcher->devices_for_key(m.device_key()) > 0) {
        last_device_seen = Clock::now();
      } else if (std::chrono::duration<double>(Clock::now() - last_device_seen).count() >
                 options.no_device_timeout_s) {
        dispatcher->cancel_job(job_id);
        logger("tracker")->warn("job {}: no device with key '{}' for {:.0f} s; failed", job_id,
                                m.device_key(), options.no_device_timeout_s);
        // Tells the client that the tracker itself decided (retrying cannot help), unlike an
        // UNAVAILABLE from a tracker that cannot be reached.
        ctx->AddTrailingMetadata(std::string(wire::kJobVerdictKey), "no-device");
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "no device with key '" + m.device_key() + "' has been registered for " +
                                std::to_string(static_cast<int>(options.no_device_timeout_s)) +
                                " s (see `tensortune status`)");
      }
      std::unique_lock<std::mutex> lock(inbox->mu);
      inbox->cv.wait_for(lock, std::chrono::milliseconds(200),
                         [&] { return !inbox->updates.empty(); });
      if (ctx->IsCancelled()) {
        lock.unlock();
        dispatcher->cancel_job(job_id);
        logger("tracker")->info("job {}: client went away; queued items dropped", job_id);
        return grpc::Status::CANCELLED;
      }
      while (!inbox->updates.empty()) {
        v1::MeasureJobUpdate u = std::move(inbox->updates.front());
        inbox->updates.pop_front();
        u.set_job_id(job_id);
        lock.unlock();
        if (!writer->Write(u)) {
          dispatcher->cancel_job(job_id);
          return grpc::Status::CANCELLED;
        }
        ++written;
        lock.lock();
      }
    }
    return grpc::Status::OK;
  }


  grpc::Status Status(grpc::ServerContext* ctx, const v1::StatusRequest*,
                      v1::StatusReply* reply) override {
    if (auto s = authorize(ctx, "Status"); !s.ok()) return s;
    *reply = dispatcher->status();
    if (auto n = archive->result_count()) reply->set_archived_results(*n);
    return grpc::Status::OK;
  }

  grpc::Status BestRecords(grpc::ServerContext* ctx, const v1::BestRecordsRequest* req,
                           v1::BestRecordsReply* reply) override {
    if (auto s = authorize(ctx, "BestRecords"); !s.ok()) return s;
    auto best = archive->best_all();
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
    }
    return grpc::Status::OK;
  }
};

TrackerServer::TrackerServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TrackerServer::~TrackerServer() { shutdown(); }

Expected<std::unique_ptr<TrackerServer>> TrackerServer::start(const TrackerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  TT_ASSIGN_OR_RETURN(impl->archive, Archive::open(options.db_path));
  Impl* raw = impl.get();
  impl->dispatcher = std::make_unique<Dispatcher>(
      options.dispatcher,
      [raw](const std::shared_ptr<const void>& context, int index, const ss::MeasureResult& r) {
        raw->record(context, index, r);
      });

  std::shared_ptr<grpc::ServerCredentials> creds;
  if (options.tls_cert.empty() != options.tls_key.empty())
    return invalid_argument("--tls-cert and --tls-key go together");
  if (options.tls_cert.empty()) {
    creds = grpc::InsecureServerCredentials();
  } else {
    grpc::SslServerCredentialsOptions ssl;
    TT_ASSIGN_OR_RETURN(std::string cert, wire::read_text_file(options.tls_cert, "TLS certificate"));
    TT_ASSIGN_OR_RETURN(std::string key, wire::read_text_file(options.tls_key, "TLS key"));
    ssl.pem_key_cert_pairs.push_back({key, cert});
    creds = grpc::SslServerCredentials(ssl);
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  const std::string address = options.host + ":" + std::to_string(options.port);
  // gRPC sets SO_REUSEPORT by default: a second tracker on the same port would then split the
  // farm's devices and clients between two archives at random. One port, one tracker.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, creds, &impl->bound_port);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.RegisterService(static_cast<v1::DeviceLink::Service*>(raw));
  builder.RegisterService(static_cast<v1::Tracker::Service*>(raw));
  // Many device streams each hold a thread of the sync server.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 4);
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->bound_port == 0)
    return unavailable("cannot listen on " + address + ": " +
                       bind_failure(options.host, options.port));
  impl->housekeeping = std::thread([raw] {
    std::unique_lock<std::mutex> lock(raw->stop_mu);
    while (!raw->stopping) {
      raw->stop_cv.wait_for(lock, std::chrono::milliseconds(250));
      lock.unlock();
      raw->dispatcher->expire(Clock::now());
      lock.lock();
    }
  });
  logger("tracker")->info("tracker listening on {}:{} ({}{}), archive {}", options.host,
                          impl->bound_port, options.tls_cert.empty() ? "plaintext" : "TLS",
                          options.token.empty() ? ", no token" : ", token required",
                          options.db_path);
  return std::unique_ptr<TrackerServer>(new TrackerServer(std::move(impl)));
}

int TrackerServer::port() const { return impl_->bound_port; }

void TrackerServer::wait() { impl_->server->Wait(); }

void TrackerServer::shutdown() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (impl_->housekeeping.joinable()) impl_->housekeeping.join();
}

}  // namespace tensortune::tracker
