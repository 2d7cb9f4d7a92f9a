#include "tracker/tracker_server.h"

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <thread>

#include "proto/convert.h"
#include "proto/rpc_channel.h"
#include "support/log.h"
#include "tracker/device_link_service.h"
#include "tracker/monitor_server.h"
#include "tracker/server_core.h"
#include "tracker/tuning_service.h"

namespace tensortune::tracker {

namespace ss = schedule_space;

namespace {

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

}  // namespace

struct TrackerServer::Impl {
  explicit Impl(const TrackerOptions& options) : core(options) {}
  ServerCore core;
  std::unique_ptr<DeviceLinkService> device_link;
  std::unique_ptr<TuningService> tuning;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<MonitorServer> monitor;
  int bound_port = 0;
  std::thread housekeeping;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;
};

TrackerServer::TrackerServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TrackerServer::~TrackerServer() { shutdown(); }

bool is_loopback_host(const std::string& host) {
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}

Expected<std::unique_ptr<TrackerServer>> TrackerServer::start(const TrackerOptions& options) {
  // Debian builds abseil with absl::Mutex's deadlock detection on, and gRPC locks an
  // absl::Mutex several times per message: the lock-order graph it keeps cost about 3% of an
  // idle 10,000-device tracker's CPU. Our own locks are std::mutex, which TSan checks.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const bool tokens = !options.token.empty() || !options.credentials.empty();
  if (!options.token.empty())
    TT_RETURN_IF_ERROR(check_token_strength(options.token, "the --token-file token"));
  if (tokens && !options.tls_client_ca.empty())
    return invalid_argument(
        "--tls-client-ca authenticates callers by their certificates; --token-file and "
        "--tokens-file are the other way: give one of them");
  if (!options.tls_client_ca.empty() && options.tls_cert.empty())
    return invalid_argument("--tls-client-ca needs --tls-cert and --tls-key (the tracker's own)");
  const bool open_to_network =
      !is_loopback_host(options.host) && !tokens && options.tls_client_ca.empty();
  if (open_to_network && !options.insecure)
    return Error{ErrorCode::kFailedPrecondition,
                 "tracker: refusing to listen on " + options.host +
                     " without authentication: anyone who can reach it could register a fake "
                     "device or submit jobs. Give --token-file FILE (the same file to devices "
                     "and clients), listen on 127.0.0.1, or pass --insecure to accept the risk"};
  const std::string metrics_host =
      options.metrics_host.empty() ? options.host : options.metrics_host;
  if (options.metrics_port >= 0 && !is_loopback_host(metrics_host) && !tokens &&
      options.tls_client_ca.empty() && !options.insecure)
    return Error{ErrorCode::kFailedPrecondition,
                 "tracker: refusing to serve the dashboard on " + metrics_host +
                     " without authentication; give --token-file or --tokens-file, keep "
                     "--metrics-host on 127.0.0.1, or pass --insecure"};
  auto impl = std::make_unique<Impl>(options);
  ServerCore& core = impl->core;
  if (auto set = core.reload_credentials(options.credentials); !set) return set.error();
  TT_ASSIGN_OR_RETURN(core.archive, Archive::open(options.db_path));
  core.archive_writer = std::make_unique<ArchiveWriter>(*core.archive, core.metrics.get());
  core.dispatcher = std::make_unique<Dispatcher>(
      options.dispatcher,
      [&core](const std::shared_ptr<const void>& context, int index, const ss::MeasureResult& r,
              const std::string& device, std::function<void()> then) {
        core.record(context, index, r, device, std::move(then));
      },
      core.metrics.get());
  impl->device_link = std::make_unique<DeviceLinkService>(core);
  impl->tuning = std::make_unique<TuningService>(core);
  Impl* raw = impl.get();

  std::shared_ptr<grpc::ServerCredentials> creds;
  if (options.tls_cert.empty() != options.tls_key.empty())
    return invalid_argument("--tls-cert and --tls-key go together");
  if (options.tls_cert.empty()) {
    creds = grpc::InsecureServerCredentials();
  } else {
    grpc::SslServerCredentialsOptions ssl;
    TT_ASSIGN_OR_RETURN(std::string cert,
                        wire::read_text_file(options.tls_cert, "TLS certificate"));
    TT_ASSIGN_OR_RETURN(std::string key, wire::read_text_file(options.tls_key, "TLS key"));
    ssl.pem_key_cert_pairs.push_back({key, cert});
    if (!options.tls_client_ca.empty()) {
      TT_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                          wire::read_text_file(options.tls_client_ca, "TLS client CA"));
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
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
  builder.RegisterService(impl->device_link.get());
  builder.RegisterService(impl->tuning.get());
  // Device streams are callback streams (no thread each); the tuning clients' job streams are
  // sync and hold a thread each while they run.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 4);
  impl->server = builder.BuildAndStart();
  if (open_to_network) {
    core.security_warning = "INSECURE: listening on " + options.host +
                            " without authentication (--insecure): any host that reaches it can "
                            "register devices and submit jobs";
    logger("tracker")->warn("{}", core.security_warning);
  }
  if (!impl->server || impl->bound_port == 0)
    return unavailable("cannot listen on " + address + ": " +
                       bind_failure(options.host, options.port));
  if (options.metrics_port >= 0) {
    TT_ASSIGN_OR_RETURN(impl->monitor,
                        MonitorServer::start(core, metrics_host, options.metrics_port));
  }
  impl->housekeeping = std::thread([raw] {
    std::unique_lock<std::mutex> lock(raw->stop_mu);
    while (!raw->stopping) {
      raw->stop_cv.wait_for(lock, std::chrono::milliseconds(250));
      lock.unlock();
      const auto now = Clock::now();
      raw->core.dispatcher->expire(now);
      raw->tuning->check_devices(now);
      lock.lock();
    }
  });
  logger("tracker")->info("tracker listening on {}:{} ({}{}), archive {}; client quota {}",
                          options.host, impl->bound_port,
                          options.tls_cert.empty() ? "plaintext" : "TLS",
                          !options.tls_client_ca.empty() ? ", client certificates required"
                          : core.authenticated()         ? ", token required"
                                                         : ", no token",
                          options.db_path, options.client_quota.describe());
  return std::unique_ptr<TrackerServer>(new TrackerServer(std::move(impl)));
}

int TrackerServer::port() const { return impl_->bound_port; }

int TrackerServer::metrics_port() const { return impl_->monitor ? impl_->monitor->port() : -1; }

Expected<int> TrackerServer::reload_credentials(std::vector<Credential> named) {
  return impl_->core.reload_credentials(std::move(named));
}

Expected<int> TrackerServer::reload_tokens_file() { return impl_->core.reload_tokens_file(); }

void TrackerServer::wait() { impl_->server->Wait(); }

void TrackerServer::shutdown() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  impl_->monitor.reset();
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (impl_->housekeeping.joinable()) impl_->housekeeping.join();
  // What is still queued is committed before the archive closes.
  impl_->core.archive_writer->stop();
}

}  // namespace tensortune::tracker
