#include "tracker/device_link_service.h"

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
           std::to_string(g.max_shared_bytes_per_block() / 1024) + " KiB " +
           std::to_string(g.max_registers_per_block()) + " regs";
  }
  return out;
}

}  // namespace

grpc::Status DeviceLinkService::Connect(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::TrackerMessage, v1::DeviceMessage>* stream) {
  Caller caller;
  if (auto s = core_.authorize(*ctx, "Connect", kRoleDevice, &caller); !s.ok()) return s;
  const std::string& credential = caller.name;
  v1::DeviceMessage first;
  if (!stream->Read(&first)) return grpc::Status(grpc::StatusCode::CANCELLED, "no Register");
  if (!first.has_register_())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message must be Register");
  const v1::Register& reg = first.register_();
  if (auto s = check_device_key("register.device_key", reg.device_key()); !s.ok()) return s;
  if (reg.slots() < 1 || reg.slots() > 256)
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "register.slots = " + std::to_string(reg.slots()) + ", must be 1..256");
  // 10 PFLOPS per slot is beyond any device of today; NaN fails the comparison too.
  const double peak = reg.peak_gflops_per_slot();
  if (!(peak >= 0 && peak <= 1e7))
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "register.peak_gflops_per_slot = " + std::to_string(peak) +
                            ", must be 0 (not stated) or a GFLOPS figure up to 1e7");
  const auto key_full = [&] {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "register.device_key '" + reg.device_key() + "' already has " +
                            std::to_string(core_.options.dispatcher.max_devices_per_key) +
                            " devices, the tracker's limit (--max-devices-per-key)");
  };
  if (!core_.dispatcher->key_has_room(reg.device_key())) return key_full();
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
  // Under a named credential the name it registers with is prefixed with the credential's, so
  // status tables and logs say whose machine measured.
  std::string name = reg.name().substr(0, 256).empty() ? ctx->peer() : reg.name().substr(0, 256);
  if (!credential.empty() && credential != "shared") name = credential + "/" + name;
  {
    v1::TrackerMessage hello;
    hello.mutable_registered()->set_heartbeat_interval_s(
        core_.options.dispatcher.heartbeat_timeout_s / 3);
    std::lock_guard<std::mutex> lock(*write_mu);
    // The id is sent after add_device; a device treats Registered as "you are in".
    if (!stream->Write(hello)) return grpc::Status::CANCELLED;
  }
  const uint64_t id = core_.dispatcher->add_device(
      reg.device_key(), reg.slots(), name, send,
      [ctx, link] {
        std::lock_guard<std::mutex> lock(link->mu);
        if (!link->closed) ctx->TryCancel();
      },
      describe_gpus(reg), peak);
  if (id == 0) {  // the key filled up since key_has_room
    std::lock_guard<std::mutex> lock(link->mu);
    link->closed = true;
    return key_full();
  }
  if (peak == 0)
    logger("tracker")->warn("device {} '{}' stated no peak GFLOPS: its timings are not bounded", id,
                            name);
  // A revoked credential ends the stream; the device is then removed as below.
  const uint64_t session =
      credential.empty() ? 0
                         : core_.add_session({credential, caller.token, kRoleDevice, [ctx, link] {
                                                std::lock_guard<std::mutex> lock(link->mu);
                                                if (!link->closed) ctx->TryCancel();
                                              }});
  v1::DeviceMessage msg;
  while (stream->Read(&msg)) {
    if (msg.has_heartbeat()) {
      core_.dispatcher->heartbeat(id);
    } else if (msg.has_result()) {
      const auto& r = msg.result();
      auto result = wire::result_from_proto(r.result());
      if (!result) {
        // A device that answers garbage costs the item an error code, not a crash.
        logger("tracker")->warn("device {} '{}' sent an invalid result for item {}: {}", id, name,
                                r.item_id(), result.error().message);
        ss::MeasureResult bad;
        bad.config_index = r.result().config_index();
        bad.costs = {ss::kErrorCost};
        bad.error_no = ss::MeasureErrorNo::kUnknownError;
        bad.error_msg = "device '" + name + "' sent an invalid result: " + result.error().message;
        bad.device_key = reg.device_key();
        core_.dispatcher->complete(id, r.item_id(), r.lease_id(), std::move(bad));
      } else {
        result->device_key = reg.device_key();
        core_.dispatcher->complete(id, r.item_id(), r.lease_id(), std::move(result).value());
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(link->mu);
    link->closed = true;
  }
  if (session) core_.remove_session(session);
  core_.dispatcher->remove_device(id);
  return grpc::Status::OK;
}

}  // namespace tensortune::tracker
