#pragma once
/// \file
/// Private to tracker/: the Tracker service, what tuning clients and operators call.
///   Measure      (measure_job.cc) a job of configs, results streamed back as they arrive.
///                Runs on gRPC's callback API: a job holds no thread while it waits, and it
///                wakes on results, on the client going away, or on the no-device deadline
///                (checked by the housekeeping thread), never on a polling timer.
///   Status, BestRecords (admin_rpcs.cc) the farm's state and the archive's best records.
///   ReloadCredentials (admin_rpcs.cc) the admin's reload of the tokens file.
#include <memory>
#include <mutex>
#include <vector>

#include "proto/farm.grpc.pb.h"
#include "tracker/server_core.h"

namespace tensortune::tracker {

class MeasureJobStream;

class TuningService final : public v1::Tracker::WithCallbackMethod_Measure<v1::Tracker::Service> {
 public:
  explicit TuningService(ServerCore& core) : core_(core) {}
  ~TuningService() override;

  grpc::ServerWriteReactor<v1::MeasureJobUpdate>* Measure(
      grpc::CallbackServerContext* ctx, const v1::MeasureJobRequest* request) override;
  grpc::Status Status(grpc::ServerContext* ctx, const v1::StatusRequest* request,
                      v1::StatusReply* reply) override;
  grpc::Status BestRecords(grpc::ServerContext* ctx, const v1::BestRecordsRequest* request,
                           v1::BestRecordsReply* reply) override;
  grpc::Status ReloadCredentials(grpc::ServerContext* ctx,
                                 const v1::ReloadCredentialsRequest* request,
                                 v1::ReloadCredentialsReply* reply) override;

  /// Fails the jobs whose device key has had no device for options.no_device_timeout_s.
  /// Called by the housekeeping thread.
  void check_devices(Clock::time_point now);

 private:
  ServerCore& core_;
  std::mutex jobs_mu_;
  std::vector<std::weak_ptr<MeasureJobStream>> jobs_;
};

}  // namespace tensortune::tracker
