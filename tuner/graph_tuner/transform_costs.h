#pragma once
/// \file
/// What layout transforms cost on a device: timed (runtime::time_layout_transform, the loop
/// compiled networks run, under the time_evaluator protocol) on this machine or on a farm's
/// device of the key, and kept in the record DB's layout_transforms table so that later runs
/// time only what is new. Where a transform cannot be timed (no timer for the key, or its
/// measurement failed) it is estimated (bytes at driver::kTransformBytesPerSecond), stored as an
/// estimate and counted as one.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/measure/local_measurer.h"
#include "records/record_store.h"
#include "tuner/graph_tuner/network_problem.h"

namespace tensortune::tuner::graph_tuner {

/// "1x64x56x56": the shape's key in the table.
std::string shape_key(const graph::Shape& shape);

/// The transform as the farm and the timer take it.
schedule_space::LayoutTransformWorkload transform_workload(const Transform& t);

/// The tensor read and written once at the bandwidth the CPU back end assumes.
double estimate_transform(const Transform& t);

/// A transform's measured seconds per run, or why it has none.
using TransformTiming = Expected<double>;
/// Times every transform given (in any order, possibly several at once); `progress(done,
/// total)` after each. One answer per transform, in the order given.
using TransformTimer = std::function<std::vector<TransformTiming>(
    const std::vector<Transform>&, const std::function<void(int, int)>& progress)>;

/// Times transforms one after the other on this machine.
TransformTimer local_transform_timer(const measure::MeasureOptions& options);

struct TransformCosts {
  std::map<Transform, double> seconds;
  int reused = 0;     ///< measured earlier, found in the table
  int measured = 0;   ///< measured now (and stored)
  int estimated = 0;  ///< estimated now (and stored as estimates), or read back as estimates
  /// Why the ones estimated now were not measured (the first few reasons, each once).
  std::vector<std::string> estimate_reasons;
};

/// The format of the transform times this build takes (TransformTiming of
/// runtime::time_layout_transform under graph-tune's protocol). Raised when the timed loop or
/// the protocol changes, so that older times are not mixed with new ones.
inline constexpr int kTransformFormat = 1;

/// Every needed transform's cost for the device key: from the table, else timed with `timer`
/// and stored; without a timer (null), or where timing fails, estimated and stored as such.
/// With a timer, earlier estimates are timed again. A table of another format is refused
/// (kFailedPrecondition, nothing written) unless `retime` clears it first.
Expected<TransformCosts> transform_costs(records::RecordStore& store, const std::string& device_key,
                                         const std::vector<Transform>& needed,
                                         const TransformTimer* timer,
                                         const std::function<void(int, int)>& progress = {},
                                         bool retime = false);

}  // namespace tensortune::tuner::graph_tuner
