#pragma once
/// \file
/// Private to tracker/: the DeviceLink service. One long-lived stream per device server:
/// Register, then work items down and heartbeats and results up.
#include "proto/farm.grpc.pb.h"
#include "tracker/server_core.h"

namespace tensortune::tracker {

class DeviceLinkService final : public v1::DeviceLink::Service {
 public:
  explicit DeviceLinkService(ServerCore& core) : core_(core) {}

  grpc::Status Connect(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::TrackerMessage, v1::DeviceMessage>* stream) override;

 private:
  ServerCore& core_;
};

}  // namespace tensortune::tracker
