#pragma once
/// \file
/// Building a config's kernel on this machine's cores for the device its task's target names,
/// as a KernelBinary (schedule_space/kernel_binary.h) that a device server loads and times
/// without compiling.

#include "schedule_space/config_space.h"
#include "schedule_space/kernel_binary.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"
#include "support/error.h"

namespace tensortune::measure {

using schedule_space::KernelBinary;
using schedule_space::KernelFormat;

/// Builds the config's kernel for the device its task's target names, on this machine's
/// cores: a cubin for the target's sm_XY (checked against the limits every supported GPU has
/// first), or an object for the CPU the target's -mcpu names. kFailedPrecondition for an
/// invalid config or a launch no GPU allows; kUnavailable when this build cannot compile for
/// the target (no NVRTC); kInternal when the compiler refuses the source.
Expected<KernelBinary> build_kernel(const schedule_space::Task& task,
                                    const schedule_space::ConfigSpace& space,
                                    const schedule_space::Config& config);

/// What identifies the build of (task, config), without building it: every field of the
/// binary but its code and build time (the source is generated and hashed, milliseconds).
/// Equal keys build equal binaries; a kernel cache looks kernels up by it. Errors as
/// build_kernel's.
Expected<KernelBinary> kernel_build_key(const schedule_space::Task& task,
                                        const schedule_space::ConfigSpace& space,
                                        const schedule_space::Config& config);

/// The result code of a build that failed with `error`: INSTANTIATION_ERROR for an invalid
/// config, else the task's compile error (COMPILE_DEVICE for a GPU, COMPILE_HOST for a CPU).
schedule_space::MeasureErrorNo build_error_no(const schedule_space::Task& task, const Error& error);

/// Whether build_kernel can build this task's kernels here (an error naming why not).
Status can_build_kernels(const schedule_space::Task& task);

}  // namespace tensortune::measure
