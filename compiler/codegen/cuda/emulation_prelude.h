#pragma once
/// \file
/// The C++ text that precedes a CUDA kernel's source when it is compiled for emulation
/// (emulator.h), and the launcher that follows it.

#include <string>

#include "compiler/codegen/cuda/cuda_kernel.h"

namespace tensortune::codegen::cuda {

/// CUDA's built-in variables and qualifiers, and the fiber scheduler that runs a grid.
extern const char kEmulationPrelude[];

/// `extern "C" const char* tt_emulate_<entry>(float* const* args, const long long* dims)`: runs
/// the kernel's grid with its kernel.arg_count arguments in ABI order (dims = grid x, y, z,
/// block x, y, z); returns null or what went wrong. One per kernel of a module.
std::string emulation_launcher(const CudaKernelSource& kernel);

}  // namespace tensortune::codegen::cuda
