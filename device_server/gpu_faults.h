#pragma once
/// \file
/// Faults a GPU worker causes on purpose, on its real GPU (`device --fault-inject
/// cuda-fault@N,cuda-hang@N`): a kernel that writes far outside its buffer (an illegal address:
/// the sticky error that loses the CUDA context, so the server must replace the worker) and a
/// kernel that never returns (the item's deadline must kill the worker). They exist so that the
/// recovery paths of a GPU server run on a GPU in its check (scripts/gpu-check.sh), not only
/// against the imitation faults of `gpu-fault@N`.
#include <string>

#include "support/error.h"

namespace tensortune::device_server {

/// The CUDA C of the faulting (hang = false) or never-ending kernel, entry "tt_fault".
std::string fault_kernel_source(bool hang);

/// Launches that kernel on GPU `gpu` and waits for it: the driver's error (an illegal address
/// names the lost context) for a fault; for a hang it does not return. kUnavailable without the
/// CUDA Toolkit, a driver or that GPU.
Status launch_fault_kernel(int gpu, bool hang);

}  // namespace tensortune::device_server
