#include "tracker/device_link_service.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>

#include "proto/convert.h"
#include "support/log.h"

namespace tensortune::tracker {

namespace ss = schedule_space;

namespace {

// "GPU 0 NVIDIA H100 sm_90 132 SMs 1980 MHz 79 GiB, per block 1024 threads 48 KiB 65536 regs;
// GPU 1 ..." from what a device registered; names truncated, at most 64 GPUs (the device is
// not trusted to be brief).
std::string describe_gpus(const v1::Register& reg) {
  std::string out;
  int shown = 0;
  for (const v1::GpuInfo& g : reg.gpus()) {
    if (++shown > 64) break;
    out += (out.empty() ? "" : "; ") + std::string("GPU ") + std::to_string(g.ordinal()) + " " +
           g.name().substr(0, 64) + " sm_" + std::to_string(g.compute_capability()) + " " +
           std::to_string(g.sm_count()) + " SMs " + std::to_string(g.clock_mhz()) + " MHz " +
           std::to_string(g.memory_bytes() >> 30) + " GiB, per block " +
           std::to_string(g.max_threads_per_block()) + " threads " +
           std::to_string(g.max_shared_bytes_per_block() / 1024) + " KiB (" +
           std::to_string(
               std::max(g.max_shared_bytes_per_block(), g.max_dynamic_shared_bytes_per_block()) /
               1024) +
           " opted in) " + std::to_string(g.max_registers_per_block()) + " regs";
  }
  return out;
}

// One device's stream. Reads: Register first, then heartbeats and results, one read in flight
// at a time. Writes: Registered, then work items, queued and written one at a time. The stream
// is finished once reads have ended and the last write is done; the dispatcher's `send` may
// outlive it, so it reaches the session through a shared Link that says when it is gone.
class DeviceSession final : public grpc::ServerBidiReactor<v1::DeviceMessage, v1::TrackerMessage> {
 public:
  DeviceSession(ServerCore& core, grpc::CallbackServerContext* ctx)
      : core_(core), ctx_(ctx), link_(std::make_shared<Link>()) {
    link_->session = this;
    if (auto s = core_.authorize(*ctx, "Connect", kRoleDevice | kRoleBuilder, &caller_); !s.ok()) {
      Finish(s);
      return;
    }
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      end_reads(grpc::Status::OK);
      return;
    }
    if (id_ == 0) {
      if (grpc::Status s = register_device(); !s.ok()) {
        end_reads(s);
        return;
      }
    } else {
      handle(in_);
    }
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(link_->mu);
    writing_ = false;
    if (!ok) {  // the device is gone; its read will end too
      link_->closed = true;
      queue_.clear();
    }
    if (!queue_.empty()) {
      start_next_write_locked(lock);
      return;
    }
    if (finishing_) finish_locked(lock);
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(link_->mu);
    link_->closed = true;
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> lock(link_->mu);
      link_->closed = true;
      link_->session = nullptr;
    }
    delete this;
  }

 private:
  struct Link {
    std::mutex mu;
    bool closed = false;
    DeviceSession* session = nullptr;  // null once the reactor is done
  };

  grpc::Status register_device() {
    if (!in_.has_register_())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message must be Register");
    reg_ = in_.register_();
    if (auto s = check_device_key("register.device_key", reg_.device_key()); !s.ok()) return s;
    // Builders make the code devices run, devices time it: one role does not give the other.
    const bool builder = reg_.device_key() == wire::kBuilderKey;
    role_ = builder ? kRoleBuilder : kRoleDevice;
    if (!(caller_.roles & role_))
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          std::string(builder ? "a builder (key '" : "a device (key '") +
                              reg_.device_key() + "') needs a credential with the " +
                              role_names(role_) + " role; '" + caller_.name + "' is " +
                              role_names(caller_.roles));
    if (reg_.slots() < 1 || reg_.slots() > 256)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "register.slots = " + std::to_string(reg_.slots()) + ", must be 1..256");
    // 10 PFLOPS per slot is beyond any device of today; NaN fails the comparison too.
    const double peak = reg_.peak_gflops_per_slot();
    if (!(peak >= 0 && peak <= 1e7))
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "register.peak_gflops_per_slot = " + std::to_string(peak) +
                              ", must be 0 (not stated) or a GFLOPS figure up to 1e7");
    if (!core_.dispatcher->key_has_room(reg_.device_key())) return key_full();
    // Under a named credential the name it registers with is prefixed with the credential's,
    // so status tables and logs say whose machine measured.
    const std::string& credential = caller_.name;
    name_ = reg_.name().substr(0, 256).empty() ? ctx_->peer() : reg_.name().substr(0, 256);
    if (!credential.empty() && credential != "shared") name_ = credential + "/" + name_;
    if (core_.dispatcher->name_registered(name_)) return name_taken();
    // Registered goes first in the queue: a device treats it as "you are in", and work the
    // dispatcher sends at once from add_device queues behind it.
    v1::TrackerMessage hello;
    hello.mutable_registered()->set_heartbeat_interval_s(
        core_.options.dispatcher.heartbeat_timeout_s / 3);
    send_message(link_, std::move(hello));
    std::shared_ptr<Link> link = link_;
    grpc::CallbackServerContext* ctx = ctx_;
    const auto cancel = [link, ctx] {
      std::lock_guard<std::mutex> lock(link->mu);
      if (link->session) ctx->TryCancel();
    };
    Dispatcher::Refusal refused = Dispatcher::Refusal::kNone;
    id_ = core_.dispatcher->add_device(
        reg_.device_key(), reg_.slots(), name_,
        [link](const v1::WorkItem& work) {
          v1::TrackerMessage m;
          *m.mutable_work() = work;
          return send_message(link, std::move(m));
        },
        cancel, describe_gpus(reg_), peak, &refused);
    if (refused == Dispatcher::Refusal::kNameTaken) return name_taken();
    if (id_ == 0) return key_full();  // the key filled up since key_has_room
    if (peak == 0 && !builder)
      logger("tracker")->warn("device {} '{}' stated no peak GFLOPS: its timings are not bounded",
                              id_, name_);
    // A revoked credential ends the stream; the device is then removed as below.
    if (!credential.empty())
      session_ = core_.add_session({credential, caller_.token, role_, cancel});
    return grpc::Status::OK;
  }

  grpc::Status name_taken() const {
    logger("tracker")->warn("refused a second device named '{}' (key {}) from {}", name_,
                            reg_.device_key(), ctx_->peer());
    return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                        "register.name: a device named '" + name_ +
                            "' is registered; give each device its own --name (this one "
                            "retries, and gets in once the other leaves)");
  }

  grpc::Status key_full() const {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "register.device_key '" + reg_.device_key() + "' already has " +
                            std::to_string(core_.options.dispatcher.max_devices_per_key) +
                            " devices, the tracker's limit (--max-devices-per-key)");
  }

  void handle(const v1::DeviceMessage& msg) {
    if (msg.has_heartbeat()) {
      core_.dispatcher->heartbeat(id_, msg.heartbeat().timing_fraction());
      return;
    }
    if (!msg.has_result()) return;
    const auto& r = msg.result();
    auto result = wire::result_from_proto(r.result());
    if (!result) {
      // A device that answers garbage costs the item an error code, not a crash.
      logger("tracker")->warn("device {} '{}' sent an invalid result for item {}: {}", id_, name_,
                              r.item_id(), result.error().message);
      ss::MeasureResult bad;
      bad.config_index = r.result().config_index();
      bad.costs = {ss::kErrorCost};
      bad.error_no = ss::MeasureErrorNo::kUnknownError;
      bad.error_msg = "device '" + name_ + "' sent an invalid result: " + result.error().message;
      bad.device_key = reg_.device_key();
      core_.dispatcher->complete(id_, r.item_id(), r.lease_id(), std::move(bad));
      return;
    }
    result->device_key = reg_.device_key();
    core_.dispatcher->complete(id_, r.item_id(), r.lease_id(), std::move(result).value());
  }

  // Reads are over (the device left, was cancelled, or broke the protocol): the device leaves
  // the dispatcher (its leased items re-queue) and the stream finishes after the last write.
  void end_reads(grpc::Status status) {
    if (session_) core_.remove_session(session_);
    if (id_) core_.dispatcher->remove_device(id_);
    std::unique_lock<std::mutex> lock(link_->mu);
    link_->closed = true;
    queue_.clear();
    status_ = std::move(status);
    finishing_ = true;
    if (!writing_) finish_locked(lock);
  }

  // Queues a message; false when the stream is gone (the dispatcher then re-queues the item).
  static bool send_message(const std::shared_ptr<Link>& link, v1::TrackerMessage m) {
    std::unique_lock<std::mutex> lock(link->mu);
    DeviceSession* s = link->session;
    if (!s || link->closed) return false;
    s->queue_.push_back(std::move(m));
    if (!s->writing_) s->start_next_write_locked(lock);
    return true;
  }

  // StartWrite and Finish are called without the lock: gRPC may run a reaction inline.
  void start_next_write_locked(std::unique_lock<std::mutex>& lock) {
    writing_ = true;
    current_ = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    StartWrite(&current_);
  }

  void finish_locked(std::unique_lock<std::mutex>& lock) {
    if (finished_) return;
    finished_ = true;
    grpc::Status status = status_;
    lock.unlock();
    Finish(status);
  }

  ServerCore& core_;
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<Link> link_;
  Caller caller_;
  v1::DeviceMessage in_;
  v1::Register reg_;
  std::string name_;
  uint8_t role_ = kRoleDevice;  ///< what it registered as: a device or a builder
  uint64_t id_ = 0;
  uint64_t session_ = 0;
  // Guarded by link_->mu.
  std::deque<v1::TrackerMessage> queue_;
  v1::TrackerMessage current_;
  bool writing_ = false, finishing_ = false, finished_ = false;
  grpc::Status status_;
};

}  // namespace

grpc::ServerBidiReactor<v1::DeviceMessage, v1::TrackerMessage>* DeviceLinkService::Connect(
    grpc::CallbackServerContext* ctx) {
  return new DeviceSession(core_, ctx);
}

}  // namespace tensortune::tracker
