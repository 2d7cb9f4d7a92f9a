#pragma once
/// \file
/// The edge between the wire (tensortune.v1 messages) and the core's plain structs. Every
/// `*_from_proto` validates what it reads and fails with kInvalidArgument naming the field
/// and the value ("workload.conv2d.stride_h = 0, must be >= 1"), so a service can answer
/// INVALID_ARGUMENT with that message and never act on a malformed request.
#include "proto/tuning.pb.h"
#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"
#include "support/error.h"

namespace tensortune::wire {

void task_to_proto(const schedule_space::Task& task, v1::Workload* workload, v1::Target* target);
/// Known template, workload fields in range (tensors of at most 2^28 elements), target lanes
/// in {4, 8, 16}.
Expected<schedule_space::Task> task_from_proto(const v1::Workload& workload,
                                               const v1::Target& target);

void config_to_proto(const schedule_space::ConfigSpace& space, const schedule_space::Config& config,
                     v1::Config* out);
/// By entity (authoritative): unknown knobs, values that are not candidates and invalid
/// configs are refused.
Expected<schedule_space::Config> config_from_proto(const schedule_space::ConfigSpace& space,
                                                   const v1::Config& config);

void result_to_proto(const schedule_space::MeasureResult& result, v1::MeasureResult* out);
/// error_no in AutoTVM's range, costs present, finite and non-negative.
Expected<schedule_space::MeasureResult> result_from_proto(const v1::MeasureResult& result);

/// number 1..1e6, repeat 1..100, min_repeat_ms 0..60000, timeout_s 0..3600, threads 1..1024.
Status validate_timing(const v1::TimingOptions& timing);

}  // namespace tensortune::wire
