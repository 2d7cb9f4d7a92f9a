#pragma once
/// \file
/// Private to tracker/: the DeviceLink service. One long-lived stream per device server:
/// Register, then work items down and heartbeats and results up.
///
/// It is a callback (reactor) service: a device's stream holds no thread. Its reads are handled
/// on gRPC's callback threads as they arrive, and work is queued per device and written as the
/// previous write completes, so the dispatcher hands work to thousands of devices without
/// waiting on any of them.
#include "proto/farm.grpc.pb.h"
#include "tracker/server_core.h"

namespace tensortune::tracker {

class DeviceLinkService final : public v1::DeviceLink::CallbackService {
 public:
  explicit DeviceLinkService(ServerCore& core) : core_(core) {}

  grpc::ServerBidiReactor<v1::DeviceMessage, v1::TrackerMessage>* Connect(
      grpc::CallbackServerContext* ctx) override;

 private:
  ServerCore& core_;
};

}  // namespace tensortune::tracker
