#pragma once
/// \file
/// The C++ text that precedes a CUDA kernel's source when it is compiled for emulation
/// (emulator.h), and the launcher that follows it.

#include <string>

#include "compiler/codegen/cuda/cuda_kernel.h"

namespace tensortune::codegen::cuda {

/// CUDA's built-in variables and qualifiers, and the fiber scheduler that runs a grid.
extern const char kEmulationPrelude[];

/// `extern "C" const char* tt_emulate(args, dims)`: runs the kernel's grid with its arguments
/// in ABI order (data, weight, out, epilogue operands; dims = grid x, y, z, block x, y, z);
/// returns null or what went wrong.
std::string emulation_launcher(const CudaKernelSource& kernel);

}  // namespace tensortune::codegen::cuda
