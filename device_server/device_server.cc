#include "device_server/device_server.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "compiler/codegen/llvm/kernel.h"
#include "device_server/device_metrics.h"
#include "device_server/peak_flops.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/cuda_driver.h"
#endif
#include "device_server/worker_process.h"
#include "proto/convert.h"
#include "proto/farm.grpc.pb.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/template.h"
#include "support/log.h"
#include "support/stopwatch.h"

namespace tensortune::device_server {
namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The options with what start-up resolved: the target registered, the GPUs.
struct ServerSetup : DeviceServerOptions {
  schedule_space::Target target;
  std::vector<v1::GpuInfo> gpu_info;  ///< registered: one per GPU served
};

// A GPU server's GPUs: each listed ordinal exists, all share one compute capability; fills the
// key (cuda-smXY when empty), the slots (one per GPU) and the target, and logs every GPU with
// its limits.
Status resolve_gpus(ServerSetup& o) {
#ifdef TT_WITH_CUDA
  auto gpus = codegen::cuda::list_gpus();
  if (!gpus) return gpus.error().with_context("--gpus");
  std::string have;
  for (const auto& g : *gpus)
    have += (have.empty() ? "" : ", ") + std::to_string(g.ordinal) + ": " + g.name + " sm_" +
            std::to_string(g.compute_capability);
  int cc = 0;
  for (int index : o.gpus) {
    if (index < 0 || index >= static_cast<int>(gpus->size()))
      return invalid_argument("--gpus: GPU " + std::to_string(index) +
                              " does not exist (this machine has " + have + ")");
    const auto& g = (*gpus)[static_cast<size_t>(index)];
    if (cc != 0 && g.compute_capability != cc)
      return invalid_argument("--gpus: the GPUs differ in compute capability (" + have +
                              "); run one device server per kind, each with its key");
    cc = g.compute_capability;
    v1::GpuInfo& info = o.gpu_info.emplace_back();
    info.set_ordinal(g.ordinal);
    info.set_name(g.name);
    info.set_compute_capability(g.compute_capability);
    info.set_sm_count(g.sm_count);
    info.set_clock_mhz(g.clock_khz / 1000);
    info.set_memory_bytes(g.memory_bytes);
    info.set_max_threads_per_block(static_cast<int32_t>(g.limits.max_threads_per_block));
    info.set_max_shared_bytes_per_block(static_cast<int32_t>(g.limits.max_shared_bytes_per_block));
    info.set_max_registers_per_block(static_cast<int32_t>(g.limits.max_registers_per_block));
    info.set_max_dynamic_shared_bytes_per_block(
        static_cast<int32_t>(g.limits.max_dynamic_shared_bytes_per_block));
    logger("device")->info(
        "GPU {}: {} sm_{}, {} SMs at {} MHz, {} GiB; per block {} threads, {} KiB shared ({} KiB "
        "opted in), {} registers",
        g.ordinal, g.name, g.compute_capability, g.sm_count, g.clock_khz / 1000,
        g.memory_bytes >> 30, g.limits.max_threads_per_block,
        g.limits.max_shared_bytes_per_block / 1024,
        g.limits.max_dynamic_shared_bytes_per_block / 1024, g.limits.max_registers_per_block);
  }
  std::sort(o.gpus.begin(), o.gpus.end());
  if (std::adjacent_find(o.gpus.begin(), o.gpus.end()) != o.gpus.end())
    return invalid_argument("--gpus lists a GPU twice");
  if (o.device_key.empty()) o.device_key = "cuda-sm" + std::to_string(cc);
  o.slots = static_cast<int>(o.gpus.size());
  o.target = schedule_space::Target{schedule_space::cuda_target_spec(cc), 1};
  return ok_status();
#else
  (void)o;
  return unavailable("--gpus: this build has no CUDA support (built without the CUDA Toolkit)");
#endif
}

// One connection's life: register, then serve until the stream ends.
class Session {
 public:
  Session(const ServerSetup& o, std::vector<std::unique_ptr<WorkerProcess>>& workers,
          const std::atomic<bool>& stop, DeviceMetrics& metrics)
      : o_(o), workers_(workers), stop_(stop), metrics_(metrics) {}

  enum class Outcome { kServed, kTransient, kRefused };

  // kServed when it registered (so the caller resets its back-off); kRefused when the tracker
  // turned the registration down for a reason that retrying cannot mend (refusal()).
  Outcome run(v1::DeviceLink::Stub& stub) {
    grpc::ClientContext ctx;
    wire::add_token(ctx, o_.tracker.token);
    stream_ = stub.Connect(&ctx);
    v1::DeviceMessage reg;
    auto* r = reg.mutable_register_();
    r->set_device_key(o_.device_key);
    r->set_slots(o_.slots);
    r->set_version("tensortune 0.1.0");
    r->set_name(o_.name);
    // The templates of this server's backend: the CPU's, or the GPU's.
    const std::string_view backend = o_.gpus.empty() ? "llvm" : "cuda";
    for (const schedule_space::Template* t : schedule_space::all_templates())
      if (t->backend() == backend) r->add_capabilities(std::string(t->name()));
    r->mutable_target()->set_spec(o_.target.spec);
    r->mutable_target()->set_vector_lanes(o_.target.vector_lanes);
    for (const v1::GpuInfo& g : o_.gpu_info) *r->add_gpus() = g;
    r->set_peak_gflops_per_slot(o_.peak_gflops);
    v1::TrackerMessage first;
    if (!stream_->Write(reg) || !stream_->Read(&first) || !first.has_registered()) {
      const grpc::Status s = finish("registration");
      if (is_permanent(s)) {
        refusal_ =
            "the tracker " + o_.tracker.address + " refused this device: " + wire::describe(s);
        return Outcome::kRefused;
      }
      return Outcome::kTransient;
    }
    // The tracker says how often it needs to hear from us; never slower than asked.
    heartbeat_s_ = o_.heartbeat_interval_s;
    if (first.registered().heartbeat_interval_s() > 0)
      heartbeat_s_ = std::min(heartbeat_s_, first.registered().heartbeat_interval_s());
    logger("device")->info("registered with {} as key {} ({} slot(s)), heartbeat every {:.1f} s",
                           o_.tracker.address, o_.device_key, o_.slots, heartbeat_s_);
    metrics_.registered(true);
    std::vector<std::thread> threads;
    for (int s = 0; s < o_.slots; ++s) threads.emplace_back([this, s] { slot_loop(s); });
    threads.emplace_back([this] { heartbeat_loop(); });
    std::thread watcher([this, &ctx] {
      // Stop promptly on shutdown even while Read blocks.
      while (!done_ && !stop_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ctx.TryCancel();
    });
    v1::TrackerMessage msg;
    while (stream_->Read(&msg)) {
      if (!msg.has_work()) continue;
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(msg.work());
      cv_.notify_one();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      queue_.clear();  // the tracker re-queues what we held
      cv_.notify_all();
      hb_cv_.notify_all();
    }
    for (auto& t : threads) t.join();
    watcher.join();
    metrics_.registered(false);
    finish("stream");
    return Outcome::kServed;
  }

  const std::string& refusal() const { return refusal_; }

 private:
  // A wrong token, a key the tracker does not accept, a tracker of another protocol: the same
  // registration would fail the same way forever.
  static bool is_permanent(const grpc::Status& s) {
    switch (s.error_code()) {
      case grpc::StatusCode::UNAUTHENTICATED:
      case grpc::StatusCode::PERMISSION_DENIED:
      case grpc::StatusCode::INVALID_ARGUMENT:
      case grpc::StatusCode::UNIMPLEMENTED:
        return true;
      default:
        return false;
    }
  }

  grpc::Status finish(const char* stage) {
    grpc::Status s = stream_->Finish();
    if (!stop_)
      logger("device")->warn("connection to {} ended at {}: {}", o_.tracker.address, stage,
                             wire::describe(s));
    return s;
  }

  bool send(const v1::DeviceMessage& m) {
    std::lock_guard<std::mutex> lock(write_mu_);
    return stream_->Write(m);
  }

  void heartbeat_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      hb_cv_.wait_for(lock, std::chrono::duration<double>(heartbeat_s_));
      if (done_) break;
      v1::DeviceMessage m;
      m.mutable_heartbeat()->set_busy_slots(busy_);
      m.mutable_heartbeat()->set_timing_fraction(metrics_.timing_fraction());
      lock.unlock();
      send(m);
      lock.lock();
    }
  }

  void slot_loop(int slot) {
    for (;;) {
      v1::WorkItem item;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
        if (done_) return;
        item = std::move(queue_.front());
        queue_.pop_front();
        ++busy_;
      }
      metrics_.slot_taken();
      const Stopwatch started;
      v1::DeviceMessage m;
      auto* r = m.mutable_result();
      r->set_item_id(item.item_id());
      r->set_lease_id(item.lease_id());
      if (o_.simulate_ms > 0) {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o_.simulate_ms));
        auto* res = r->mutable_result();
        res->set_config_index(item.config().index());
        res->add_costs_s(o_.simulate_ms / 1e3);
        res->set_all_cost_s(o_.simulate_ms / 1e3);
        res->set_timestamp(now_unix());
        res->set_threads(item.timing().threads());
        res->set_number(1);
      } else {
        const double timeout = item.timing().timeout_s() > 0 ? item.timing().timeout_s() : 10.0;
        *r->mutable_result() = workers_[slot]->measure(item, timeout + o_.worker_grace_s);
      }
      r->mutable_result()->set_device_key(o_.device_key);
      double timed_s = 0;
      if (!o_.builder)  // a builder times nothing (and its kernel is checked by the tracker)
        if (auto result = wire::result_from_proto(r->result()))
          timed_s = result->timed_seconds(item.timing().repeat());
      metrics_.measured(r->result(), started.seconds(), timed_s);
      send(m);
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
  }

  const ServerSetup& o_;
  std::vector<std::unique_ptr<WorkerProcess>>& workers_;
  const std::atomic<bool>& stop_;
  DeviceMetrics& metrics_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::DeviceMessage, v1::TrackerMessage>> stream_;
  std::mutex mu_, write_mu_;
  std::condition_variable cv_;     // work for the slots
  std::condition_variable hb_cv_;  // wakes the heartbeat loop at shutdown
  std::deque<v1::WorkItem> queue_;
  // Written under mu_; atomic because the shutdown watcher polls it without the lock.
  std::atomic<bool> done_{false};
  int busy_ = 0;
  double heartbeat_s_ = 2;
  std::string refusal_;
};

// Blocks until the channel is connected or `stop`: gRPC re-dials with its own back-off
// (capped at 0.5 s by make_tracker_channel), so a restarted tracker is found within about
// half a second of listening. Says once every 10 s that it is still waiting.
void wait_for_tracker(grpc::Channel& channel, const std::string& address,
                      const std::atomic<bool>& stop) {
  auto next_note = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!stop) {
    if (channel.WaitForConnected(std::chrono::system_clock::now() + std::chrono::milliseconds(200)))
      return;
    if (std::chrono::steady_clock::now() > next_note) {
      logger("device")->info(
          "waiting for the tracker at {} ({})", address,
          channel.GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE ? "unreachable" : "connecting");
      next_note = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
  }
}

}  // namespace

Status run_device_server(const DeviceServerOptions& options, const std::atomic<bool>& stop) {
  ServerSetup o;
  static_cast<DeviceServerOptions&>(o) = options;
  o.target = codegen::host_target();
  if (!o.gpus.empty()) TT_RETURN_IF_ERROR(resolve_gpus(o));
  if (o.slots < 1 || o.slots > 256)
    return invalid_argument("--slots = " + std::to_string(o.slots) + ", must be 1..256");
  if (o.builder) {
    if (!o.gpus.empty())
      return invalid_argument("a builder builds on its cores: it takes no --gpus");
    o.device_key = wire::kBuilderKey;
    o.peak_gflops = 0;  // it times nothing
  }
  if (o.device_key.empty()) return invalid_argument("--key is empty");
  if (o.device_key == wire::kBuilderKey && !o.builder)
    return invalid_argument("--key '" + o.device_key +
                            "' is the builder servers' key (tensortune builder)");
  if (o.peak_gflops < 0)
    return invalid_argument("--peak-gflops = " + std::to_string(o.peak_gflops) + ", must be >= 0");
  if (o.peak_gflops == 0 && !o.builder)
    o.peak_gflops = o.gpus.empty() ? cpu_peak_gflops_per_thread(o.target.vector_lanes)
                                   : gpu_peak_gflops(o.gpu_info);
  if (o.builder)
    logger("device")->info("a builder: {} worker(s) build kernels for the farm's jobs", o.slots);
  else
    logger("device")->info("peak {:.0f} GFLOPS per slot{}: faster timings are rejected",
                           o.peak_gflops, o.gpus.empty() ? " and thread" : "");
  if (o.name.empty()) {
    char host[256] = "host";
    ::gethostname(host, sizeof host - 1);
    o.name = std::string(host) + ":" + std::to_string(::getpid());
  }
  const double memory =
      static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (o.worker_memory_bytes <= 0 && o.gpus.empty()) o.worker_memory_bytes = memory / o.slots;
  if (o.max_work_bytes <= 0) {
    o.max_work_bytes = memory / (2.0 * o.slots);
    for (const auto& g : o.gpu_info)
      o.max_work_bytes = std::min(o.max_work_bytes, static_cast<double>(g.memory_bytes()) / 2);
  }
  logger("device")->info(
      "items needing more than {:.1f} GiB of operands are refused "
      "(--max-work-bytes)",
      o.max_work_bytes / double(1 << 30));
  if (o.gpus.empty() && worker_memory_limit_supported())
    logger("device")->info("each worker's address space is bounded to {:.1f} GiB (--worker-memory)",
                           o.worker_memory_bytes / double(1 << 30));
  // Workers start before any gRPC thread exists, and are replaced by spawn (never fork).
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  if (o.simulate_ms <= 0) {
    if (auto faults = parse_fault_injection(o.fault_inject); !faults) return faults.error();
    for (int s = 0; s < o.slots; ++s) {
      const int gpu = o.gpus.empty() ? -1 : o.gpus[static_cast<size_t>(s)];
      WorkerOptions w{o.device_key, o.fault_inject, gpu, o.max_work_bytes,
                      gpu < 0 ? o.worker_memory_bytes : 0};
      w.build_on_device = o.build_on_device;
      w.builder = o.builder;
      w.accept_built_code = o.accept_built_code;
      workers.push_back(std::make_unique<WorkerProcess>(o.worker_executable, std::move(w)));
      TT_RETURN_IF_ERROR(workers.back()->start());
    }
  }
  DeviceMetrics metrics(
      [&workers] {
        int n = 0;
        for (const auto& w : workers) n += w->restarts();
        return n;
      },
      o.slots);
  if (o.metrics_port >= 0) {
    TT_ASSIGN_OR_RETURN(int port, metrics.serve(o.metrics_host, o.metrics_port));
    (void)port;
  }
  TT_ASSIGN_OR_RETURN(auto channel, wire::make_tracker_channel(o.tracker));
  auto stub = v1::DeviceLink::NewStub(channel);
  // Back-off between sessions that fail after connecting (a tracker that accepts and then
  // drops us); the wait for a tracker that is away is wait_for_tracker's.
  double backoff = 0.1;
  while (!stop) {
    wait_for_tracker(*channel, o.tracker.address, stop);
    if (stop) break;
    Session session(o, workers, stop, metrics);
    const Session::Outcome outcome = session.run(*stub);
    if (outcome == Session::Outcome::kRefused)
      return Error{ErrorCode::kFailedPrecondition, session.refusal()};
    if (outcome == Session::Outcome::kServed) backoff = 0.1;
    if (stop) break;
    logger("device")->info("reconnecting to {} in {:.1f} s", o.tracker.address, backoff);
    for (double waited = 0; waited < backoff && !stop; waited += 0.05)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backoff = std::min(backoff * 2, 1.0);
  }
  return ok_status();
}

}  // namespace tensortune::device_server
