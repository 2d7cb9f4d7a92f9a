#pragma once
/// \file
/// The client side of the Tracker service, for tuning clients and operators: submit a batch of
/// configs as one job and collect its results as they stream back, query status, query the
/// archive's best records. gRPC failures become Errors naming the tracker and the status.
#include <functional>
#include <memory>
#include <vector>

#include "proto/farm.grpc.pb.h"
#include "proto/rpc_channel.h"
#include "schedule_space/config_space.h"
#include "schedule_space/kernel_binary.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"

namespace tensortune::tracker {

struct FarmTiming {
  int64_t number = schedule_space::kDefaultNumber;
  int repeat = schedule_space::kDefaultRepeat;
  double min_repeat_ms = schedule_space::kDefaultMinRepeatMs;
  double timeout_s = 10;
  bool flush_cache = false;
  int threads = 1;
};

class TrackerClient {
 public:
  static Expected<std::unique_ptr<TrackerClient>> connect(const wire::TrackerEndpoint& endpoint);

  /// One job: results in the order of `configs`. `on_result` (optional) sees each as it
  /// arrives (index into configs, result, whether it came from the archive). Fails with
  /// kUnavailable when the tracker cannot be reached (worth retrying) and kFailedPrecondition
  /// when the tracker itself failed the job (no device of the key registered in time) or
  /// refused it for a quota that waiting cannot satisfy. A quota that waiting can satisfy
  /// (the client's running jobs, queued items, jobs per minute) is waited for, up to 30 min.
  Expected<std::vector<schedule_space::MeasureResult>> measure(
      const schedule_space::Task& task, const schedule_space::ConfigSpace& space,
      const std::vector<schedule_space::Config>& configs, const FarmTiming& timing,
      const std::string& device_key, const std::string& job_name, int priority = 0,
      const std::function<void(int, const schedule_space::MeasureResult&, bool)>& on_result = {});

  /// measure with each config's kernel built on this side (kernels[i] for configs[i]): the
  /// devices load and time them instead of compiling. Needs a credential with the builder role.
  /// The configs go in as many jobs, one after another, as the message limit needs.
  Expected<std::vector<schedule_space::MeasureResult>> measure_built(
      const schedule_space::Task& task, const schedule_space::ConfigSpace& space,
      const std::vector<schedule_space::Config>& configs,
      const std::vector<schedule_space::KernelBinary>& kernels, const FarmTiming& timing,
      const std::string& device_key, const std::string& job_name, int priority = 0);

  /// Times a layout transform on a device of `device_key` (a job of one item that the tracker
  /// does not archive); errors as measure's.
  Expected<schedule_space::MeasureResult> measure_layout_transform(
      const schedule_space::LayoutTransformWorkload& transform,
      const schedule_space::Target& target, const FarmTiming& timing, const std::string& device_key,
      const std::string& job_name);
  Expected<v1::StatusReply> status();
  Expected<v1::BestRecordsReply> best_records(const v1::BestRecordsRequest& request);
  /// Admin: the tracker reloads its tokens file (as SIGHUP).
  Expected<v1::ReloadCredentialsReply> reload_credentials();

  /// Waits until the channel to the tracker is connected (true) or `seconds` pass (false):
  /// what a client does between retries, so that it resumes as soon as a restarted tracker
  /// listens instead of after a fixed pause.
  bool wait_for_tracker(double seconds);

  const wire::TrackerEndpoint& endpoint() const { return endpoint_; }

 private:
  TrackerClient(wire::TrackerEndpoint endpoint, std::shared_ptr<grpc::Channel> channel);
  Error rpc_error(const char* rpc, const grpc::Status& status) const;
  Expected<std::vector<schedule_space::MeasureResult>> run_job(
      const v1::MeasureJobRequest& request,
      const std::function<void(int, const schedule_space::MeasureResult&, bool)>& on_result);
  /// One attempt; `*quota_wait` is set when the tracker refused it for a quota worth waiting
  /// for.
  Expected<std::vector<schedule_space::MeasureResult>> run_job_once(
      const v1::MeasureJobRequest& request,
      const std::function<void(int, const schedule_space::MeasureResult&, bool)>& on_result,
      bool* quota_wait);
  wire::TrackerEndpoint endpoint_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Tracker::Stub> stub_;
};

}  // namespace tensortune::tracker
