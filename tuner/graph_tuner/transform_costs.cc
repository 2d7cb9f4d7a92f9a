// Implements transform_costs.h.
#include "tuner/graph_tuner/transform_costs.h"

#include <algorithm>

#include "compiler/driver/block_selection.h"
#include "compiler/runtime/transform_timing.h"

namespace tensortune::tuner::graph_tuner {

namespace ss = schedule_space;

std::string shape_key(const graph::Shape& shape) {
  std::string s;
  for (int64_t d : shape) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

ss::LayoutTransformWorkload transform_workload(const Transform& t) {
  return {t.shape[0], t.shape[1], t.shape[2], t.shape[3], t.from, t.to};
}

double estimate_transform(const Transform& t) {
  return 4.0 * double(graph::num_elements(t.shape)) / driver::kTransformBytesPerSecond;
}

TransformTimer local_transform_timer(const measure::MeasureOptions& options) {
  return [options](const std::vector<Transform>& transforms,
                   const std::function<void(int, int)>& progress) {
    std::vector<TransformTiming> out;
    for (const Transform& t : transforms) {
      const ss::MeasureResult r = runtime::time_layout_transform(transform_workload(t), options);
      if (r.ok())
        out.emplace_back(r.mean_cost());
      else
        out.emplace_back(Error{ErrorCode::kInternal, ss::measure_error_name(r.error_no) +
                                                         std::string(": ") + r.error_msg});
      if (progress) progress(static_cast<int>(out.size()), static_cast<int>(transforms.size()));
    }
    return out;
  };
}

Expected<TransformCosts> transform_costs(records::RecordStore& store, const std::string& device_key,
                                         const std::vector<Transform>& needed,
                                         const TransformTimer* timer,
                                         const std::function<void(int, int)>& progress,
                                         bool retime) {
  TT_ASSIGN_OR_RETURN(const int format, store.transform_format());
  if (retime || format != kTransformFormat) {
    if (!retime)
      return Error{ErrorCode::kFailedPrecondition,
                   store.path() + " holds layout-transform times of format " +
                       std::to_string(format) + "; this tensortune takes format " +
                       std::to_string(kTransformFormat) +
                       " (another timed loop or protocol), so they are not comparable. Nothing "
                       "was changed; --retime-transforms deletes them and times them again"};
    TT_RETURN_IF_ERROR(store.reset_transforms(kTransformFormat));
  }
  TransformCosts out;
  std::vector<Transform> missing;
  for (const Transform& t : needed) {
    TT_ASSIGN_OR_RETURN(auto stored,
                        store.transform_cost(device_key, shape_key(t.shape), t.from, t.to));
    if (stored && (stored->measured || !timer)) {
      out.seconds[t] = stored->seconds;
      ++(stored->measured ? out.reused : out.estimated);
    } else {
      missing.push_back(t);
    }
  }
  std::vector<TransformTiming> timed;
  if (timer && !missing.empty()) timed = (*timer)(missing, progress);
  for (size_t i = 0; i < missing.size(); ++i) {
    const Transform& t = missing[i];
    records::RecordStore::TransformCost c;
    c.measured = i < timed.size() && timed[i].has_value();
    if (c.measured) {
      c.seconds = *timed[i];
    } else {
      c.seconds = estimate_transform(t);
      const std::string reason = !timer             ? "no device of the key to time them on"
                                 : i < timed.size() ? timed[i].error().message
                                                    : "the timer gave no answer";
      if (out.estimate_reasons.size() < 3 &&
          std::find(out.estimate_reasons.begin(), out.estimate_reasons.end(), reason) ==
              out.estimate_reasons.end())
        out.estimate_reasons.push_back(reason);
    }
    TT_RETURN_IF_ERROR(store.put_transform_cost(device_key, shape_key(t.shape), t.from, t.to, c));
    out.seconds[t] = c.seconds;
    ++(c.measured ? out.measured : out.estimated);
  }
  return out;
}

}  // namespace tensortune::tuner::graph_tuner
