#pragma once
/// \file
/// Timing a layout transform as a compiled network runs it (`layout_transform_kernel` over a
/// thread pool), under the same time_evaluator protocol as a kernel's measurement: what the
/// graph tuner prices a transform at, here or on a farm's device server.
#include "compiler/measure/local_measurer.h"
#include "schedule_space/measure.h"
#include "schedule_space/workload.h"

namespace tensortune::runtime {

/// Checks that the transform puts every element where the layouts say (WRONG_ANSWER where it
/// does not), then times it on `options.threads` threads with `options.timing` (flushing the
/// output before each round with `options.flush_cache`). The result is a kernel measurement's:
/// costs per kept round, config index 0, the device key (default: this host's).
schedule_space::MeasureResult time_layout_transform(
    const schedule_space::LayoutTransformWorkload& transform,
    const measure::MeasureOptions& options);

}  // namespace tensortune::runtime
