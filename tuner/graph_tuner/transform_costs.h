#pragma once
/// \file
/// What layout transforms cost on a device: measured on this machine with the loop the executor
/// runs (runtime/native_kernels.h) under the time_evaluator protocol, kept in the record DB's
/// layout_transforms table so that later runs measure only what is new; an estimate (bytes at
/// driver::kTransformBytesPerSecond) where the device is not this machine, stored as such.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "records/record_store.h"
#include "tuner/graph_tuner/network_problem.h"

namespace tensortune::tuner::graph_tuner {

/// "1x64x56x56": the shape's key in the table.
std::string shape_key(const graph::Shape& shape);

/// Median seconds of one run of the transform on `threads` threads of this machine.
double measure_transform(const Transform& t, int threads);
/// The tensor read and written once at the bandwidth the CPU back end assumes.
double estimate_transform(const Transform& t);

struct TransformCosts {
  std::map<Transform, double> seconds;
  int reused = 0;     ///< found in the table
  int measured = 0;   ///< measured now (and stored)
  int estimated = 0;  ///< estimated now (and stored as estimates), or read back as estimates
};

/// Every needed transform's cost for the device key: from the table, else measured here when
/// `measure_here` (the device key is this machine's), else estimated. `progress(done, total)`
/// after each new measurement.
Expected<TransformCosts> transform_costs(records::RecordStore& store, const std::string& device_key,
                                         const std::vector<Transform>& needed, bool measure_here,
                                         int threads,
                                         const std::function<void(int, int)>& progress = {});

}  // namespace tensortune::tuner::graph_tuner
