// tune-op --tracker: the tuning loop's Measurer over the farm. Each batch is one job; a
// tracker that is down is retried (its archive makes resubmission cheap) for two minutes.
#include <thread>

#include "proto/rpc_channel.h"
#include "schedule_space/gpu_limits.h"
#include "support/log.h"
#include "support/stopwatch.h"
#include "tracker/tracker_client.h"
#include "workflow/tuning_session.h"

namespace tensortune::workflow {
namespace {

namespace ss = schedule_space;

class FarmMeasurer final : public tuner::Measurer {
 public:
  FarmMeasurer(ss::Task task, std::unique_ptr<tracker::TrackerClient> client,
               tracker::FarmTiming timing, std::string key, std::string job, int priority)
      : task_(std::move(task)),
        client_(std::move(client)),
        timing_(timing),
        key_(std::move(key)),
        job_(std::move(job)),
        priority_(priority) {}

  Expected<std::vector<ss::MeasureResult>> measure(
      const ss::ConfigSpace& space, const std::vector<ss::Config>& configs) override {
    const Stopwatch start;
    double pause = 0.5;
    for (;;) {
      auto r = client_->measure(task_, space, configs, timing_, key_, job_, priority_);
      const double waited = start.seconds();
      if (r || r.error().code != ErrorCode::kUnavailable || waited > 120) return r;
      logger("tune")->warn("{}; retrying as soon as the tracker answers (at most {:.1f} s)",
                           r.error().message, pause);
      // Resume as soon as the tracker listens again, not after a fixed pause.
      if (!client_->wait_for_tracker(pause)) pause = std::min(pause * 2, 10.0);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // never a busy loop
    }
  }
  std::string device_key() const override { return key_; }
  int threads() const override {
    return ss::cuda_compute_capability(task_.target.spec) ? 0 : timing_.threads;
  }

 private:
  ss::Task task_;
  std::unique_ptr<tracker::TrackerClient> client_;
  tracker::FarmTiming timing_;
  std::string key_, job_;
  int priority_;
};

}  // namespace

std::string farm_device_key(const ss::Task& task, const TuningOptions& f) {
  if (!f.farm_key.empty()) return f.farm_key;
  // GPU servers register as cuda-smXY: a CUDA task's key follows from its target.
  if (auto cc = ss::cuda_compute_capability(task.target.spec))
    return "cuda-sm" + std::to_string(*cc);
  return "";
}

Expected<std::unique_ptr<tuner::Measurer>> make_farm_measurer(const ss::Task& task,
                                                              const TuningOptions& f) {
  const std::string key = farm_device_key(task, f);
  if (key.empty()) return invalid_argument("--tracker needs --key (the device key to measure on)");
  TT_ASSIGN_OR_RETURN(
      auto e, wire::tracker_endpoint(f.tracker, f.token_file, f.tls_ca, f.tls_cert, f.tls_key));
  TT_ASSIGN_OR_RETURN(auto client, tracker::TrackerClient::connect(e));
  tracker::FarmTiming t;
  t.number = f.number;
  t.repeat = f.repeat;
  t.min_repeat_ms = f.min_repeat_ms;
  t.timeout_s = f.timeout_s;
  t.flush_cache = f.flush_cache;
  t.threads = f.threads;
  return std::unique_ptr<tuner::Measurer>(std::make_unique<FarmMeasurer>(
      task, std::move(client), t, key, "tune-op " + f.tuner + "-seed" + std::to_string(f.seed),
      f.priority));
}

}  // namespace tensortune::workflow
