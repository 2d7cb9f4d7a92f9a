// tune-op --tracker: the tuning loop's Measurer over the farm. Each batch is one job; a
// tracker that is down is retried (its archive makes resubmission cheap) for two minutes.
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "compiler/measure/kernel_build.h"
#include "compiler/measure/local_measurer.h"
#include "proto/convert.h"
#include "proto/rpc_channel.h"
#include "records/record_store.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/template.h"
#include "support/log.h"
#include "support/stopwatch.h"
#include "support/work_queue.h"
#include "tracker/tracker_client.h"
#include "workflow/tuning_session.h"

namespace tensortune::workflow {
namespace {

namespace ss = schedule_space;

/// Configs of a batch built here: the binaries of those that built, and the results of those
/// that did not (an invalid config, a source the compiler refuses), which never leave here.
struct BuiltBatch {
  std::vector<ss::Config> configs;
  std::vector<ss::KernelBinary> kernels;
  std::vector<size_t> positions;                          ///< of configs[i] in the batch
  std::vector<std::optional<ss::MeasureResult>> results;  ///< per batch position
};

/// What the builds of a task came to (logged when its measurer goes).
struct BuildStats {
  int64_t built = 0, cached = 0;
  double build_s = 0;  ///< summed over the builds (they run in parallel)
  double wall_s = 0;
};

/// Builds the kernels of the configs at the positions given (here or on the farm's builders);
/// fails only when no build could be asked for at all (the tracker unreachable).
using BuildFn = std::function<Status(
    const std::vector<ss::Config>& configs, const std::vector<size_t>& positions,
    std::vector<std::optional<Expected<ss::KernelBinary>>>* built)>;

/// Builds a batch with `build`, the kernels of `cache` (when given) taken from it and those built
/// stored in it: every store call on this thread (a store is one connection).
Expected<BuiltBatch> build_batch(const ss::Task& task, const ss::ConfigSpace& space,
                                 const std::vector<ss::Config>& configs, const BuildFn& build,
                                 const std::string& key, const std::string& where,
                                 records::RecordStore* cache, int64_t cache_bytes,
                                 BuildStats* stats) {
  const Stopwatch wall;
  std::vector<std::optional<Expected<ss::KernelBinary>>> built(configs.size());
  std::vector<bool> from_cache(configs.size(), false);
  if (cache) {
    for (size_t i = 0; i < configs.size(); ++i) {
      auto key_of = measure::kernel_build_key(task, space, configs[i]);
      if (!key_of) continue;  // build_kernel says why
      auto hit = cache->cached_kernel(*key_of);
      if (!hit) {
        logger("tune")->warn("kernel cache: {}", hit.error().message);
        continue;
      }
      if (*hit) {
        built[i] = std::move(**hit);
        from_cache[i] = true;
      }
    }
  }
  const auto started = std::chrono::steady_clock::now();
  std::vector<size_t> missing;
  for (size_t i = 0; i < configs.size(); ++i)
    if (!built[i]) missing.push_back(i);
  if (!missing.empty()) TT_RETURN_IF_ERROR(build(configs, missing, &built));
  BuiltBatch b;
  b.results.resize(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    if (*built[i]) {
      ss::KernelBinary& k = **built[i];
      if (from_cache[i]) {
        ++stats->cached;
      } else {
        ++stats->built;
        stats->build_s += k.build_s;
        if (cache)
          if (Status s = cache->cache_kernel(k, cache_bytes); !s)
            logger("tune")->warn("kernel cache: {}", s.error().message);
      }
      b.configs.push_back(configs[i]);
      b.kernels.push_back(std::move(k));
      b.positions.push_back(i);
      continue;
    }
    const Error& e = built[i]->error();
    ss::MeasureResult r;
    r.config_index = configs[i].index;
    r.device_key = key;
    b.results[i] = measure::finish_result(std::move(r), measure::build_error_no(task, e),
                                          "built " + where + ": " + e.message, started);
  }
  stats->wall_s += wall.seconds();
  return b;
}

class FarmMeasurer final : public tuner::Measurer {
 public:
  FarmMeasurer(ss::Task task, std::unique_ptr<tracker::TrackerClient> client,
               tracker::FarmTiming timing, std::string key, std::string job, int priority,
               int build_workers, bool remote_build, records::RecordStore* cache,
               int64_t cache_bytes)
      : task_(std::move(task)),
        client_(std::move(client)),
        timing_(timing),
        key_(std::move(key)),
        job_(std::move(job)),
        priority_(priority),
        build_workers_(remote_build ? 0 : build_workers),
        remote_build_(remote_build),
        cache_(cache),
        cache_bytes_(cache_bytes) {}
  ~FarmMeasurer() override {
    const int64_t total = stats_.built + stats_.cached;
    if (total == 0) return;
    const std::string who = remote_build_
                                ? "by the farm's builders"
                                : "here on " + std::to_string(build_workers_) + " threads";
    logger("tune")->info(
        "kernels built {}: {} ({:.2f} s each, {:.1f} s in all), {} from the kernel cache ({:.0f}% "
        "hits)",
        who, stats_.built, stats_.built ? stats_.build_s / static_cast<double>(stats_.built) : 0.0,
        stats_.wall_s, stats_.cached,
        100.0 * static_cast<double>(stats_.cached) / static_cast<double>(total));
  }

  Expected<std::vector<ss::MeasureResult>> measure(
      const ss::ConfigSpace& space, const std::vector<ss::Config>& configs) override {
    if (build_workers_ <= 0 && !remote_build_) return submit(space, configs, nullptr, key_, job_);
    // A pipeline: the batch is built a chunk (one config per build thread here, a few on the
    // builders) at a time, and each chunk is sent as soon as it is built, so the devices time
    // chunk k while chunk k+1 builds and wait only for the first.
    const size_t chunk = remote_build_ ? 4 : static_cast<size_t>(build_workers_);
    const BuildFn build = [&](const std::vector<ss::Config>& part, const std::vector<size_t>& at,
                              std::vector<std::optional<Expected<ss::KernelBinary>>>* built) {
      return remote_build_ ? build_on_builders(space, part, at, built)
                           : build_here(space, part, at, built);
    };
    const std::string where = remote_build_ ? "by the farm's builders" : "on the client";
    std::vector<std::optional<ss::MeasureResult>> results(configs.size());
    struct Sent {
      size_t begin;
      std::vector<size_t> positions;
      std::future<Expected<std::vector<ss::MeasureResult>>> results;
    };
    std::vector<Sent> sent;
    std::optional<Error> failure;
    for (size_t begin = 0; begin < configs.size(); begin += chunk) {
      const std::vector<ss::Config> part(
          configs.begin() + static_cast<std::ptrdiff_t>(begin),
          configs.begin() + static_cast<std::ptrdiff_t>(std::min(configs.size(), begin + chunk)));
      auto built =
          build_batch(task_, space, part, build, key_, where, cache_, cache_bytes_, &stats_);
      if (!built) {
        failure = built.error();  // the jobs already sent are still waited for, below
        break;
      }
      BuiltBatch& b = *built;
      for (size_t i = 0; i < part.size(); ++i)
        if (b.results[i]) results[begin + i] = std::move(b.results[i]);
      if (b.configs.empty()) continue;
      sent.push_back(
          {begin, std::move(b.positions),
           std::async(std::launch::async, [this, &space, chunk_configs = std::move(b.configs),
                                           kernels = std::move(b.kernels)] {
             return submit(space, chunk_configs, &kernels, key_, job_);
           })});
    }
    for (Sent& s : sent) {
      auto r = s.results.get();  // every job is waited for, even after one failed
      if (!r) {
        if (!failure) failure = r.error();
        continue;
      }
      for (size_t i = 0; i < r->size(); ++i) results[s.begin + s.positions[i]] = std::move((*r)[i]);
    }
    if (failure) return *failure;
    std::vector<ss::MeasureResult> out;
    out.reserve(configs.size());
    for (auto& r : results) out.push_back(std::move(*r));
    return out;
  }
  std::string device_key() const override { return key_; }
  int threads() const override {
    return ss::cuda_compute_capability(task_.target.spec) ? 0 : timing_.threads;
  }

 private:
  Status build_here(const ss::ConfigSpace& space, const std::vector<ss::Config>& configs,
                    const std::vector<size_t>& at,
                    std::vector<std::optional<Expected<ss::KernelBinary>>>* built) const {
    for_each_item(at.size(), build_workers_, [&](size_t i) {
      (*built)[at[i]] = measure::build_kernel(task_, space, configs[at[i]]);
    });
    return ok_status();
  }

  /// One job on the builder servers' key: each result carries its config's kernel.
  Status build_on_builders(const ss::ConfigSpace& space, const std::vector<ss::Config>& configs,
                           const std::vector<size_t>& at,
                           std::vector<std::optional<Expected<ss::KernelBinary>>>* built) {
    std::vector<ss::Config> wanted;
    for (size_t p : at) wanted.push_back(configs[p]);
    TT_ASSIGN_OR_RETURN(auto results,
                        submit(space, wanted, nullptr, wire::kBuilderKey, job_ + " (build)"));
    for (size_t i = 0; i < at.size(); ++i) {
      const ss::MeasureResult& r = results[i];
      if (r.ok() && r.kernel)
        (*built)[at[i]] = *r.kernel;
      else
        (*built)[at[i]] = Error{r.error_no == ss::MeasureErrorNo::kInstantiationError
                                    ? ErrorCode::kFailedPrecondition
                                    : ErrorCode::kInternal,
                                r.ok() ? "the builder answered without a kernel" : r.error_msg};
    }
    return ok_status();
  }

  /// One batch as a job on `key` (with its built kernels when `kernels`), retried while the
  /// tracker is unreachable.
  Expected<std::vector<ss::MeasureResult>> submit(const ss::ConfigSpace& space,
                                                  const std::vector<ss::Config>& configs,
                                                  const std::vector<ss::KernelBinary>* kernels,
                                                  const std::string& key, const std::string& job) {
    const Stopwatch start;
    double pause = 0.5;
    for (;;) {
      auto r = kernels ? client_->measure_built(task_, space, configs, *kernels, timing_, key, job,
                                                priority_)
                       : client_->measure(task_, space, configs, timing_, key, job, priority_);
      const double waited = start.seconds();
      if (r || r.error().code != ErrorCode::kUnavailable || waited > 120) return r;
      logger("tune")->warn("{}; retrying as soon as the tracker answers (at most {:.1f} s)",
                           r.error().message, pause);
      // Resume as soon as the tracker listens again, not after a fixed pause.
      if (!client_->wait_for_tracker(pause)) pause = std::min(pause * 2, 10.0);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // never a busy loop
    }
  }
  ss::Task task_;
  std::unique_ptr<tracker::TrackerClient> client_;
  tracker::FarmTiming timing_;
  std::string key_, job_;
  int priority_;
  int build_workers_;
  bool remote_build_;
  records::RecordStore* cache_;
  int64_t cache_bytes_;
  BuildStats stats_;
};

}  // namespace

std::string farm_device_key(const ss::Task& task, const TuningOptions& f) {
  if (!f.farm_key.empty()) return f.farm_key;
  // GPU servers register as cuda-smXY: a CUDA task's key follows from its target.
  if (auto cc = ss::cuda_compute_capability(task.target.spec))
    return "cuda-sm" + std::to_string(*cc);
  return "";
}

Expected<int> farm_build_workers(const ss::Task& task, const TuningOptions& f) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const bool gpu = ss::template_of(task).target_kind().runs_on_gpu();
  if (f.build_workers == 0 || (f.build_workers < 0 && !gpu)) return 0;
  if (Status can = measure::can_build_kernels(task); !can) {
    if (f.build_workers > 0)
      return can.error().with_context("--build-workers " + std::to_string(f.build_workers));
    static std::once_flag warned;
    std::call_once(warned, [&] {
      logger("tune")->warn(
          "{}: this client builds no kernels (the farm's builders do, or devices started with "
          "--build-on-device)",
          can.error().message);
    });
    return 0;
  }
  return f.build_workers > 0 ? f.build_workers : cores;
}

Expected<std::unique_ptr<tuner::Measurer>> make_farm_measurer(const ss::Task& task,
                                                              const TuningOptions& f,
                                                              records::RecordStore* store) {
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
  TT_ASSIGN_OR_RETURN(const int build_workers, farm_build_workers(task, f));
  bool remote = f.remote_build;
  if (!remote && build_workers == 0 && f.build_workers < 0 &&
      ss::template_of(task).target_kind().runs_on_gpu()) {
    // This client cannot build CUDA kernels: the farm's builders do, where it has any.
    if (auto s = client->status(); s)
      for (const auto& d : s->devices()) remote = remote || d.device_key() == wire::kBuilderKey;
  }
  return std::unique_ptr<tuner::Measurer>(std::make_unique<FarmMeasurer>(
      task, std::move(client), t, key, "tune-op " + f.tuner + "-seed" + std::to_string(f.seed),
      f.priority, build_workers, remote, f.kernel_cache_mb > 0 ? store : nullptr,
      static_cast<int64_t>(f.kernel_cache_mb) << 20));
}

}  // namespace tensortune::workflow
