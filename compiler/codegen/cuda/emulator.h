#pragma once
/// \file
/// Running generated CUDA kernels on the CPU, for checking their numerics where no GPU is and
/// for debugging a schedule (`--emulate`): the very source NVRTC compiles, compiled by the
/// host's C++ compiler behind a prelude that gives blockIdx, threadIdx, blockDim, gridDim,
/// __shared__ and __syncthreads() their CUDA meaning. Blocks run one after another; a block's
/// threads are fibers that run in turn up to each __syncthreads(), so a barrier holds exactly
/// as on a GPU, and a barrier some threads of a block never reach is reported instead of
/// hanging. Slow (a context switch per thread per barrier and per mma.sync): checking, not
/// timing.

#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "support/error.h"
#include "support/thread_pool.h"

namespace tensortune::codegen::cuda {

/// Several kernels compiled together (one host compiler run): a compiled network's.
class EmulatedModule {
 public:
  /// Runs kernel `index`'s (kernels()[index]) whole grid on `args`, its arg_count pointers in ABI
  /// order; with a pool, its blocks are split over the pool's threads (each thread has its own
  /// fibers and shared memory). kInternal when a block's threads disagree on a barrier,
  /// kInvalidArgument when the argument count is not the kernel's.
  Status launch(size_t index, const std::vector<float*>& args, ThreadPool* pool = nullptr) const;
  const std::vector<CudaKernelSource>& kernels() const;

  struct Impl;
  explicit EmulatedModule(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Impl> impl_;
};

class EmulatedKernel {
 public:
  /// Runs the whole grid. `operands` are the epilogue's (kernel().epilogue_operands of them).
  /// Fails (kInternal) when a block's threads disagree on a barrier, kInvalidArgument when the
  /// operand count is not the kernel's.
  Status launch(const float* data, const float* weight, float* out,
                const std::vector<const float*>& operands = {}) const;
  const CudaKernelSource& kernel() const;

  explicit EmulatedKernel(EmulatedModule module) : module_(std::move(module)) {}

 private:
  EmulatedModule module_;
};

/// The host C++ compiler the emulator runs: $TT_EMULATION_CXX, else the compiler tensortune
/// was built with, else `c++` from PATH.
std::string emulation_compiler();

/// Compiles the kernels' sources (distinct entries) for the CPU and loads them. kUnavailable: no
/// host C++ compiler (the message says which was tried); kInternal: a source did not compile
/// (the message carries the compiler's first errors); kInvalidArgument: two kernels share an
/// entry.
Expected<EmulatedModule> compile_module_for_emulation(const std::vector<CudaKernelSource>& kernels);
Expected<EmulatedKernel> compile_for_emulation(const CudaKernelSource& kernel);

}  // namespace tensortune::codegen::cuda
