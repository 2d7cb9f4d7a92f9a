#pragma once
/// \file
/// What measures configs of one task: the CPU's LocalMeasurer or, for CUDA templates, the
/// GpuMeasurer (one GPU). Callers that take both (the device server's worker, tuning sessions)
/// hold a Measurer made by make_measurer.

#include <memory>
#include <vector>

#include "compiler/measure/local_measurer.h"
#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"
#include "support/error.h"

namespace tensortune::measure {

/// A LocalMeasurer for CPU templates; for CUDA templates a GpuMeasurer on GPU `options.gpu`,
/// or kUnavailable naming why there is none (a build without the CUDA Toolkit, no driver, no
/// such GPU) and kInvalidArgument when the task's compute capability is not the GPU's.
Expected<std::unique_ptr<Measurer>> make_measurer(const schedule_space::Task& task,
                                                  const MeasureOptions& options);

}  // namespace tensortune::measure
