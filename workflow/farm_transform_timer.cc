#include "workflow/farm_transform_timer.h"

#include <algorithm>
#include <mutex>

#include "proto/rpc_channel.h"
#include "support/work_queue.h"
#include "tracker/tracker_client.h"

namespace tensortune::workflow {

namespace gt = tuner::graph_tuner;
namespace ss = schedule_space;

Expected<gt::TransformTimer> farm_transform_timer(const FarmAddress& f, const ss::Target& target,
                                                  const measure::MeasureOptions& options) {
  TT_ASSIGN_OR_RETURN(
      auto e, wire::tracker_endpoint(f.tracker, f.token_file, f.tls_ca, f.tls_cert, f.tls_key));
  TT_ASSIGN_OR_RETURN(std::shared_ptr<tracker::TrackerClient> client,
                      tracker::TrackerClient::connect(e));
  TT_ASSIGN_OR_RETURN(auto status, client->status());
  int slots = 0;
  for (const auto& q : status.queues())
    if (q.device_key() == f.device_key) slots += q.slots();
  if (slots == 0)
    return Error{ErrorCode::kFailedPrecondition, "tracker " + f.tracker + " has no device of key " +
                                                     f.device_key +
                                                     " to time the layout transforms on"};
  tracker::FarmTiming timing;
  timing.number = options.timing.number;
  timing.repeat = options.timing.repeat;
  timing.min_repeat_ms = options.timing.min_repeat_ms;
  timing.timeout_s = options.timing.timeout_s;
  timing.threads = options.threads;
  const int parallel = std::clamp(slots, 1, 16);
  const std::string key = f.device_key;
  return gt::TransformTimer([=](const std::vector<gt::Transform>& transforms,
                                const std::function<void(int, int)>& progress) {
    std::vector<gt::TransformTiming> out(transforms.size(), unavailable("not timed"));
    std::mutex mu;
    int done = 0;
    for_each_item(transforms.size(), parallel, [&](size_t i) {
      auto r = client->measure_layout_transform(gt::transform_workload(transforms[i]), target,
                                                timing, key, "graph-tune layout transforms");
      std::lock_guard<std::mutex> lock(mu);
      if (!r)
        out[i] = r.error();
      else if (!r->ok())
        out[i] = Error{ErrorCode::kInternal,
                       std::string(ss::measure_error_name(r->error_no)) + ": " + r->error_msg};
      else
        out[i] = r->mean_cost();
      if (progress) progress(++done, static_cast<int>(transforms.size()));
    });
    return out;
  });
}

}  // namespace tensortune::workflow
