#pragma once
/// \file
/// The edge between the wire (tensortune.v1 messages) and the core's plain structs. Every
/// `*_from_proto` validates what it reads and fails with kInvalidArgument naming the field
/// and the value ("workload.conv2d.stride_h = 0, must be >= 1"), so a service can answer
/// INVALID_ARGUMENT with that message and never act on a malformed request.
#include "proto/tuning.pb.h"
#include "schedule_space/config_space.h"
#include "schedule_space/kernel_binary.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"
#include "support/error.h"

namespace tensortune::wire {

void task_to_proto(const schedule_space::Task& task, v1::Workload* workload, v1::Target* target);
/// Known template, workload fields in range (tensors of at most 2^28 elements), target lanes
/// in {4, 8, 16}.
Expected<schedule_space::Task> task_from_proto(const v1::Workload& workload,
                                               const v1::Target& target);

/// A layout transform to time (Workload.layout_transform, template_name "layout_transform").
void layout_transform_to_proto(const schedule_space::LayoutTransformWorkload& transform,
                               v1::Workload* workload);
/// Fields in range, both blocks dividing the channels; fails on a workload of another kind.
Expected<schedule_space::LayoutTransformWorkload> layout_transform_from_proto(
    const v1::Workload& workload);
/// The single config of a layout transform "task": index 0, no knobs.
inline constexpr char kLayoutTransformName[] = "layout_transform";

void config_to_proto(const schedule_space::ConfigSpace& space, const schedule_space::Config& config,
                     v1::Config* out);
/// By entity (authoritative): unknown knobs, values that are not candidates and invalid
/// configs are refused.
Expected<schedule_space::Config> config_from_proto(const schedule_space::ConfigSpace& space,
                                                   const v1::Config& config);

/// The device key of a farm's builder servers (`tensortune builder`): a job on it builds its
/// configs (each result carries its kernel) instead of measuring them, and is not archived.
inline constexpr char kBuilderKey[] = "builder";

void result_to_proto(const schedule_space::MeasureResult& result, v1::MeasureResult* out);
/// error_no in AutoTVM's range, costs present, finite and non-negative; a kernel as
/// kernel_binary_from_proto checks it.
Expected<schedule_space::MeasureResult> result_from_proto(const v1::MeasureResult& result);

void kernel_binary_to_proto(const schedule_space::KernelBinary& binary, v1::KernelBinary* out);
/// A known format, an arch and compiler of 1..128 printable characters, at most 512
/// features, source_sha256 a hex SHA-256, code of 1 byte..64 MiB whose SHA-256 is `sha256`,
/// build_s finite and >= 0. built_by is read as it is (the tracker overwrites a client's).
Expected<schedule_space::KernelBinary> kernel_binary_from_proto(const v1::KernelBinary& binary);

/// number 1..1e6, repeat 1..100, min_repeat_ms 0..60000, timeout_s 0..3600, threads 1..1024.
Status validate_timing(const v1::TimingOptions& timing);

}  // namespace tensortune::wire
