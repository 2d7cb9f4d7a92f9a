// The farm's commands: `tracker`, `device`, `status`, and the hidden `device-worker`.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/commands.h"
#include "device_server/device_server.h"
#include "device_server/worker_process.h"
#include "records/record_store.h"
#include "support/log.h"
#include "tracker/status_json.h"
#include "tracker/tracker_client.h"
#include "tracker/tracker_server.h"

namespace tensortune::cli {
namespace {

std::atomic<bool> g_stop{false};

// SIGINT/SIGTERM set a flag that a watcher thread turns into an orderly shutdown.
void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = true; };
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

struct TrackerFlags {
  tracker::TrackerOptions options;
  std::string host;  ///< empty: chosen by whether there is a token
  std::string token_file, tokens_file, port_file, metrics_port_file;
  int64_t sqlite_heap_limit_mib = 0;
};

// Written after binding, renamed into place so a reader never sees a partial file.
void write_port_file(const std::string& file, int port) {
  if (file.empty()) return;
  const std::string tmp = file + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::rename(tmp.c_str(), file.c_str());
}

Status run_tracker(TrackerFlags f) {
  if (!f.token_file.empty()) {
    TT_ASSIGN_OR_RETURN(f.options.token, wire::read_token_file(f.token_file));
  }
  if (!f.tokens_file.empty()) {
    TT_ASSIGN_OR_RETURN(f.options.credentials, tracker::load_tokens_file(f.tokens_file));
    f.options.tokens_file = f.tokens_file;
  }
  // Protected by default: without a token only this machine can reach the tracker.
  const bool authenticated = !f.options.token.empty() || !f.options.credentials.empty() ||
                             !f.options.tls_client_ca.empty();
  if (f.host.empty()) f.host = authenticated ? "0.0.0.0" : "127.0.0.1";
  f.options.host = f.host;
  install_stop_signals();
  if (f.sqlite_heap_limit_mib > 0) records::limit_sqlite_heap(f.sqlite_heap_limit_mib << 20);
  TT_ASSIGN_OR_RETURN(auto server, tracker::TrackerServer::start(f.options));
  std::printf("tracker listening on %s:%d, archive %s\n", f.options.host.c_str(), server->port(),
              f.options.db_path.c_str());
  std::fflush(stdout);
  if (server->metrics_port() > 0)
    std::printf("dashboard and metrics on %s://%s:%d/\n",
                f.options.tls_cert.empty() ? "http" : "https",
                (f.options.metrics_host.empty() ? f.options.host : f.options.metrics_host).c_str(),
                server->metrics_port());
  std::fflush(stdout);
  write_port_file(f.metrics_port_file, server->metrics_port());
  write_port_file(f.port_file, server->port());
  // SIGHUP reloads the tokens file: revoked credentials lose their streams at once; a file
  // that does not load keeps the old set (and says why).
  static std::atomic<bool> reload{false};
  struct sigaction hup {};
  hup.sa_handler = [](int) { reload = true; };
  sigaction(SIGHUP, &hup, nullptr);
  std::thread watcher([&] {
    while (!g_stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!reload.exchange(false)) continue;
      if (f.tokens_file.empty()) {
        logger("tracker")->warn("SIGHUP: no --tokens-file to reload");
        continue;
      }
      auto ended = server->reload_tokens_file();
      if (ended)
        logger("tracker")->info("SIGHUP: {} reloaded, {} session(s) of revoked credentials ended",
                                f.tokens_file, *ended);
      else
        logger("tracker")->error("SIGHUP: {} not reloaded, the old credentials stay: {}",
                                 f.tokens_file, ended.error().message);
    }
    server->shutdown();
  });
  server->wait();
  g_stop = true;
  watcher.join();
  return ok_status();
}

struct DeviceFlags {
  device_server::DeviceServerOptions options;
  std::string token_file;
};

struct AdminFlags {
  std::string tracker, token_file, tls_ca, tls_cert, tls_key;
};

Status reload_credentials(const AdminFlags& f) {
  TT_ASSIGN_OR_RETURN(
      auto e, wire::tracker_endpoint(f.tracker, f.token_file, f.tls_ca, f.tls_cert, f.tls_key));
  TT_ASSIGN_OR_RETURN(auto client, tracker::TrackerClient::connect(e));
  TT_ASSIGN_OR_RETURN(auto reply, client->reload_credentials());
  std::printf(
      "tracker %s reloaded its tokens file: %d credential(s), %d session(s) of revoked "
      "credentials ended\n",
      f.tracker.c_str(), reply.credentials(), reply.sessions_ended());
  return ok_status();
}

Status run_device(DeviceFlags f) {
  if (f.options.device_key.empty() && f.options.gpus.empty() && !f.options.builder)
    return invalid_argument("--key is required (a CPU device server); GPU servers take --gpus");
  TT_ASSIGN_OR_RETURN(
      f.options.tracker,
      wire::tracker_endpoint(f.options.tracker.address, f.token_file, f.options.tracker.tls_ca,
                             f.options.tracker.tls_cert, f.options.tracker.tls_key));
  install_stop_signals();
  return device_server::run_device_server(f.options, g_stop);
}

struct StatusFlags {
  wire::TrackerEndpoint endpoint;
  std::string token_file;
  bool json = false;
};

Status print_status(StatusFlags f) {
  TT_ASSIGN_OR_RETURN(f.endpoint,
                      wire::tracker_endpoint(f.endpoint.address, f.token_file, f.endpoint.tls_ca,
                                             f.endpoint.tls_cert, f.endpoint.tls_key));
  TT_ASSIGN_OR_RETURN(auto client, tracker::TrackerClient::connect(f.endpoint));
  TT_ASSIGN_OR_RETURN(v1::StatusReply s, client->status());
  if (f.json) {
    nlohmann::json j = tracker::status_to_json(s);
    j["tracker"] = f.endpoint.address;
    std::printf("%s\n", j.dump(2).c_str());
    return ok_status();
  }
  std::printf("Tracker %s (up %.0f s, %lld results archived)\n\n", f.endpoint.address.c_str(),
              s.uptime_s(), static_cast<long long>(s.archived_results()));
  if (!s.security_warning().empty()) std::printf("WARNING: %s\n\n", s.security_warning().c_str());
  std::printf("Queue status\n%-20s %8s %6s %5s %7s %8s\n", "key", "devices", "slots", "free",
              "queued", "running");
  for (const auto& q : s.queues())
    std::printf("%-20s %8d %6d %5d %7d %8d\n", q.device_key().c_str(), q.devices(), q.slots(),
                q.free_slots(), q.queued(), q.running());
  // "timing": the share of the slots' wall time spent timing kernels over the last minute;
  // low while busy means the device waits for compiles, the tracker or its clients.
  std::printf("\nDevices\n%-5s %-20s %-28s %6s %5s %7s %10s\n", "id", "key", "name", "slots",
              "busy", "timing", "heartbeat");
  for (const auto& d : s.devices()) {
    std::printf("%-5llu %-20s %-28s %6d %5d %6.0f%% %8.1f s\n",
                static_cast<unsigned long long>(d.device_id()), d.device_key().c_str(),
                d.name().c_str(), d.slots(), d.busy(), 100 * d.timing_fraction(),
                d.last_heartbeat_age_s());
    if (!d.hardware().empty()) std::printf("      %s\n", d.hardware().c_str());
  }
  // Running jobs first: they are what an operator watches; finished ones are history.
  for (const bool finished : {false, true}) {
    std::printf("\n%s jobs\n%-5s %-28s %-16s %-14s %4s %6s %6s %7s %6s %6s %9s\n",
                finished ? "Finished" : "Running", "id", "name", "client", "key", "prio", "total",
                "queued", "running", "done", "failed", finished ? "ended" : "age");
    int shown = 0;
    for (const auto& j : s.jobs()) {
      if (j.finished() != finished) continue;
      ++shown;
      std::printf("%-5llu %-28s %-16s %-14s %4d %6d %6d %7d %6d %6d %7.0f s\n",
                  static_cast<unsigned long long>(j.job_id()), j.name().c_str(),
                  j.client().empty() ? "-" : j.client().c_str(), j.device_key().c_str(),
                  j.priority(), j.total(), j.queued(), j.running(), j.done(), j.failed(),
                  finished ? j.finished_age_s() : j.age_s());
    }
    if (shown == 0) std::printf("(none)\n");
  }
  return ok_status();
}

// `tensortune tracker`: the farm's coordinator.
void add_tracker_command(CLI::App& app, int& exit_code) {
  auto tf = std::make_shared<TrackerFlags>();
  // A device's slots start their next item without a round trip to the tracker.
  tf->options.dispatcher.prefetch_per_device = 1;
  CLI::App* t = app.add_subcommand(
      "tracker", "Run a tracker: device servers dial in, tuning clients submit jobs");
  t->add_option("--host", tf->host,
                "address to listen on (default: 127.0.0.1, this machine only; with --token-file "
                "or --tokens-file: 0.0.0.0, every interface)");
  t->add_option("--tokens-file", tf->tokens_file,
                "named credentials, one 'name role token' line each (roles: device, client, "
                "admin); mode 600. Devices and clients pass their own token with --token-file");
  t->add_flag("--insecure", tf->options.insecure,
              "allow a --host other than loopback without --token-file: anyone who can reach the "
              "port can register devices and submit jobs (warned at start-up and in status)");
  t->add_option("--port", tf->options.port, "port to listen on (0: any free port; see --port-file)")
      ->check(at_least(0, 65535))
      ->capture_default_str();
  t->add_option("--db", tf->options.db_path, "SQLite archive of every result")
      ->capture_default_str();
  t->add_option("--token-file", tf->token_file,
                "require this shared token from devices and clients");
  t->add_option("--tls-cert", tf->options.tls_cert, "PEM certificate: serve TLS (with --tls-key)");
  t->add_option("--tls-key", tf->options.tls_key, "PEM private key of --tls-cert");
  t->add_option("--tls-client-ca", tf->options.tls_client_ca,
                "mutual TLS: require every device and client to present a certificate signed by "
                "this CA (PEM); its CN is the caller's name and its O the role (device, client "
                "or admin). Instead of --token-file/--tokens-file; needs --tls-cert");
  t->add_option("--quota-jobs", tf->options.client_quota.running_jobs,
                "per client: jobs running at once (0: no limit; a tokens-file line's jobs=N "
                "overrides it for that client)")
      ->check(at_least(0))
      ->capture_default_str()
      ->group("Quotas");
  t->add_option("--quota-queued", tf->options.client_quota.queued_items,
                "per client: configs queued or measuring at once (0: no limit; queued=N)")
      ->check(at_least(0))
      ->capture_default_str()
      ->group("Quotas");
  t->add_option("--quota-batch", tf->options.client_quota.batch_items,
                "per client: configs in one job (0: no limit; batch=N)")
      ->check(at_least(0))
      ->capture_default_str()
      ->group("Quotas");
  t->add_option("--quota-per-minute", tf->options.client_quota.submits_per_minute,
                "per client: jobs submitted in any minute (0: no limit; per_minute=N)")
      ->check(at_least(0))
      ->capture_default_str()
      ->group("Quotas");
  t->add_option("--peak-margin", tf->options.dispatcher.peak_margin,
                "reject a result faster than the device's registered peak GFLOPS times this "
                "(UNKNOWN_ERROR)")
      ->check(at_least(1))
      ->capture_default_str();
  t->add_option("--max-message-bytes", tf->options.max_message_bytes, "largest request accepted")
      ->check(at_least(1024, 1 << 30))
      ->capture_default_str()
      ->group("Limits");
  t->add_option("--max-devices-per-key", tf->options.dispatcher.max_devices_per_key,
                "devices one key may have at once; one more is refused (RESOURCE_EXHAUSTED)")
      ->check(at_least(1))
      ->capture_default_str()
      ->group("Limits");
  t->add_option("--heartbeat-timeout", tf->options.dispatcher.heartbeat_timeout_s,
                "seconds of silence after which a device is dropped and its work re-queued")
      ->check(at_least(0.5))
      ->capture_default_str();
  t->add_option("--prefetch", tf->options.dispatcher.prefetch_per_device,
                "items a device holds beyond one per slot, queued on it so that a slot starts "
                "its next item without a round trip to the tracker (0: one per free slot)")
      ->check(at_least(0, 64))
      ->capture_default_str();
  t->add_option("--lease-margin", tf->options.dispatcher.lease_margin_s,
                "seconds a lease lasts beyond twice the item's timeout")
      ->check(at_least(0))
      ->capture_default_str();
  t->add_option("--no-device-timeout", tf->options.no_device_timeout_s,
                "seconds a job waits for a device of its key before it fails (UNAVAILABLE)")
      ->check(at_least(1))
      ->capture_default_str();
  t->add_option("--finished-job-ttl", tf->options.dispatcher.finished_job_ttl_s,
                "seconds a finished job stays in `status` (under Finished jobs)")
      ->check(at_least(0))
      ->capture_default_str();
  t->add_option("--sqlite-heap-limit-mib", tf->sqlite_heap_limit_mib,
                "cap on the archive's SQLite memory (page caches), MiB; 0: none (each archive "
                "connection's cache may reach 64 MiB)")
      ->check(at_least(0))
      ->capture_default_str()
      ->group("Limits");
  t->add_option("--port-file", tf->port_file, "write the bound port here once listening");
  t->add_option("--metrics-port", tf->options.metrics_port,
                "serve the live dashboard at / and Prometheus metrics at /metrics on this HTTP "
                "port (HTTPS with --tls-cert; 0: any free port). The dashboard needs a client "
                "token (login form, or Authorization: Bearer); /metrics needs none")
      ->check(at_least(0, 65535))
      ->group("Monitoring");
  t->add_option("--metrics-host", tf->options.metrics_host,
                "address of --metrics-port (default: the tracker's --host; without a token only "
                "loopback, unless --insecure)")
      ->group("Monitoring");
  t->add_option("--metrics-port-file", tf->metrics_port_file,
                "write the bound --metrics-port here once listening")
      ->group("Monitoring");
  t->footer(
      "\nExample:\n  tensortune tracker --port 9190 --db tracker.db --token-file token.txt\n"
      "Then start devices with `tensortune device --tracker HOST:9190 --key x86-avx512` and tune "
      "with\n"
      "`tensortune tune-op ... --tracker HOST:9190 --key x86-avx512`. Stop with Ctrl-C.");
  t->callback([&exit_code, tf] {
    if (Status s = run_tracker(*tf); !s) exit_code = report_error(s.error());
  });
}

// `tensortune device`: a device server (CPU slots or GPUs).
void add_device_command(CLI::App& app, int& exit_code) {
  auto df = std::make_shared<DeviceFlags>();
  CLI::App* d = app.add_subcommand(
      "device", "Run a device server: register with a tracker and measure its work");
  d->add_option("--tracker", df->options.tracker.address, "HOST:PORT of the tracker")->required();
  d->add_option("--key", df->options.device_key,
                "device key clients ask for, e.g. x86-avx512 (required for CPU servers; GPU "
                "servers default to cuda-smXY of their GPUs)");
  d->add_option("--gpus", df->options.gpus,
                "a GPU server: these GPU ordinals (0,1,...), one slot and one worker process "
                "each, measuring the CUDA templates")
      ->delimiter(',');
  d->add_option("--slots", df->options.slots,
                "measurements at once (one per socket: timings on a shared CPU are worthless)")
      ->check(at_least(1, 256))
      ->capture_default_str();
  d->add_option("--token-file", df->token_file, "the tracker's shared token");
  d->add_option("--tls-ca", df->options.tracker.tls_ca,
                "CA certificate (PEM) of the tracker's TLS certificate");
  add_client_certificate_options(*d, df->options.tracker.tls_cert, df->options.tracker.tls_key);
  d->add_option("--metrics-port", df->options.metrics_port,
                "serve this server's Prometheus metrics at /metrics on this HTTP port "
                "(measurements by error code, busy slots, worker restarts; 0: any free port)")
      ->check(at_least(0, 65535))
      ->group("Monitoring");
  d->add_option("--metrics-host", df->options.metrics_host, "address of --metrics-port")
      ->capture_default_str()
      ->group("Monitoring");
  d->add_option("--peak-gflops", df->options.peak_gflops,
                "peak GFLOPS of one slot on one thread (a GPU server: one GPU), stated to the "
                "tracker, which rejects faster timings (default: from the CPU's vector width and "
                "highest clock, or the GPU's SMs and clock)")
      ->check(at_least(0));
  d->add_option("--max-work-bytes", df->options.max_work_bytes,
                "refuse items whose operands and output need more bytes than this "
                "(INSTANTIATION_ERROR, before any allocation; default: half of this machine's "
                "memory shared among the slots, at most half a GPU's memory)")
      ->check(at_least(0));
  d->add_option("--worker-memory", df->options.worker_memory_bytes,
                "bound each CPU worker's address space to this many bytes, so that a measurement "
                "that allocates without end is an error result, not the OOM killer's business "
                "(default: this machine's memory shared among the slots; GPU workers: none)")
      ->check(at_least(0));
  d->add_flag("--build-on-device", df->options.build_on_device,
              "a GPU server: also compile items that come without a built kernel (clients "
              "that do not build: tune --build-workers 0, older tensortune); by default a GPU "
              "server only times cubins built on the clients' or builders' cores, so its GPUs "
              "never wait for NVRTC");
  d->add_flag("--accept-built-code", df->options.accept_built_code,
              "a CPU server: load the object code items carry (built by a credential with the "
              "builder role) instead of compiling each config here; off by default, since that "
              "code then runs on this machine");
  d->add_option("--name", df->options.name, "name in status tables (default host:pid)");
  d->add_option(
       "--worker-grace", df->options.worker_grace_s,
       "seconds a worker may take beyond the item's timeout before it is killed (RUN_TIMEOUT)")
      ->check(at_least(0.1))
      ->capture_default_str();
  d->add_option("--simulate-ms", df->options.simulate_ms,
                "benchmarks of the farm: build nothing, answer every item after this many ms")
      ->check(at_least(0))
      ->group("Testing");
  d->add_option("--fault-inject", df->options.fault_inject,
                "tests of the farm: workers crash, hang or lie for these config indices "
                "(crash@3,hang@5,garbage@7)")
      ->group("Testing");
  d->footer(
      "\nExample:\n  tensortune device --tracker 10.0.0.5:9190 --key x86-avx512 --token-file "
      "token.txt\n"
      "Each measurement runs in a worker process: a crash or hang costs one result "
      "(RUNTIME_DEVICE,\n"
      "RUN_TIMEOUT), not the server. It reconnects by itself when the tracker restarts, and exits\n"
      "with the tracker's reason when its registration is refused (wrong token, invalid key).\n"
      "A GPU server: tensortune device --tracker 10.0.0.5:9190 --gpus 0,1,2,3 (key cuda-sm90 on "
      "H100s).\n"
      "A GPU server times cubins the tuning clients built on their own cores (tune "
      "--build-workers,\n"
      "the default for CUDA tasks; their credential needs the builder role), so its GPUs never\n"
      "wait for NVRTC; --build-on-device also compiles items sent without one.");
  d->callback([&exit_code, df] {
    if (Status s = run_device(*df); !s) exit_code = report_error(s.error());
  });
}

// `tensortune builder`: a builder server (CPU cores building kernels for the farm's jobs).
void add_builder_command(CLI::App& app, int& exit_code) {
  auto bf = std::make_shared<DeviceFlags>();
  bf->options.builder = true;
  bf->options.slots = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CLI::App* b = app.add_subcommand(
      "builder", "Run a builder server: build kernels on this machine's cores for the farm's jobs");
  b->add_option("--tracker", bf->options.tracker.address, "HOST:PORT of the tracker")->required();
  b->add_option("--workers", bf->options.slots,
                "kernels built at once, one worker process each (default: this machine's cores)")
      ->check(at_least(1, 256));
  b->add_option("--token-file", bf->token_file,
                "a token whose credential has the builder role (the tracker refuses others)");
  b->add_option("--tls-ca", bf->options.tracker.tls_ca,
                "CA certificate (PEM) of the tracker's TLS certificate");
  add_client_certificate_options(*b, bf->options.tracker.tls_cert, bf->options.tracker.tls_key);
  b->add_option("--name", bf->options.name, "name in status tables (default host:pid)");
  b->add_option("--metrics-port", bf->options.metrics_port,
                "serve this server's Prometheus metrics at /metrics on this HTTP port")
      ->check(at_least(0, 65535))
      ->group("Monitoring");
  b->footer(
      "\nExample:\n  tensortune builder --tracker 10.0.0.5:9190 --token-file builder.token\n"
      "It registers under the key 'builder'. A client that cannot build (no NVRTC, few cores) or\n"
      "is told to (tune --remote-build) sends each batch here first, then the built kernels to\n"
      "the devices, which time them (docs/gpu.md). A builder needs no GPU; building CUDA kernels\n"
      "needs this build's NVRTC (the CUDA Toolkit's libnvrtc).");
  b->callback([&exit_code, bf] {
    if (Status s = run_device(*bf); !s) exit_code = report_error(s.error());
  });
}

// `tensortune device-worker`: hidden; the process a device server spawns per slot.
void add_device_worker_command(CLI::App& app, int& exit_code) {
  auto wf = std::make_shared<device_server::WorkerOptions>();
  CLI::App* w = app.add_subcommand("device-worker", "");  // hidden: spawned by `device`
  w->group("");
  w->add_option("--device-key", wf->device_key);
  w->add_option("--gpu", wf->gpu);
  w->add_option("--fault-inject", wf->fault_inject);
  w->add_option("--max-work-bytes", wf->max_work_bytes);
  w->add_option("--memory-limit-bytes", wf->memory_limit_bytes);
  w->add_flag("--build-on-device", wf->build_on_device);
  w->add_flag("--accept-built-code", wf->accept_built_code);
  w->add_flag("--builder", wf->builder);
  w->callback([&exit_code, wf] { exit_code = device_server::run_device_worker(*wf); });
}

// `tensortune status`: a tracker's devices, queues and jobs.
void add_status_command(CLI::App& app, int& exit_code) {
  auto sf = std::make_shared<StatusFlags>();
  CLI::App* st = app.add_subcommand("status", "Show a tracker's devices, queues and jobs");
  st->add_option("--tracker", sf->endpoint.address, "HOST:PORT")->required();
  st->add_option("--token-file", sf->token_file, "the tracker's shared token");
  st->add_option("--tls-ca", sf->endpoint.tls_ca, "CA certificate (PEM) of the tracker");
  add_client_certificate_options(*st, sf->endpoint.tls_cert, sf->endpoint.tls_key);
  st->add_flag("--json", sf->json, "print JSON");
  st->footer("\nExample:\n  tensortune status --tracker localhost:9190");
  st->callback([&exit_code, sf] {
    if (Status s = print_status(*sf); !s) exit_code = report_error(s.error());
  });
}

// `tensortune admin ...`: an administrator's calls to its tracker.
void add_admin_command(CLI::App& app, int& exit_code) {
  auto af = std::make_shared<AdminFlags>();
  CLI::App* admin = app.add_subcommand("admin", "A farm administrator's calls to its tracker");
  admin->require_subcommand(1);
  CLI::App* reload = admin->add_subcommand(
      "reload-credentials",
      "Make the tracker reload its --tokens-file (as SIGHUP does, from any machine)");
  reload->add_option("--tracker", af->tracker, "HOST:PORT")->required();
  reload->add_option("--token-file", af->token_file, "an admin credential's token");
  reload->add_option("--tls-ca", af->tls_ca, "CA certificate (PEM) of the tracker");
  add_client_certificate_options(*reload, af->tls_cert, af->tls_key);
  reload->footer(
      "\nExample:\n  tensortune admin reload-credentials --tracker farm:9190 --token-file "
      "admin.tok\nRevoked credentials lose their device streams and running jobs at once; their "
      "measured\nresults stay archived and leased items re-queue. A file that does not load "
      "keeps the old set.");
  reload->callback([&exit_code, af] {
    if (Status s = reload_credentials(*af); !s) exit_code = report_error(s.error());
  });
}

}  // namespace

void add_farm_commands(CLI::App& app, int& exit_code) {
  add_tracker_command(app, exit_code);
  add_device_command(app, exit_code);
  add_device_worker_command(app, exit_code);
  add_builder_command(app, exit_code);
  add_status_command(app, exit_code);
  add_admin_command(app, exit_code);
}

}  // namespace tensortune::cli
