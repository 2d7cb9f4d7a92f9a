#pragma once
/// \file
/// CUDA C for one (task, config) pair: the contract between the GPU templates' emitters and
/// what compiles and runs their kernels (NVRTC and the driver on a GPU, the emulator on a CPU).
///
/// Every generated kernel has one ABI, the CPU network kernels' argument order:
///   extern "C" __global__ void <entry>(const float* data, const float* weight, float* out,
///                                      const float* e0, const float* e1, ...)
/// in the template's layouts (schedule_space::KernelSignature), then a network kernel's extra
/// inputs (CudaKernelOptions::inputs), then one pointer per epilogue operand
/// (epilogue::EpilogueOp::operand), launched as `grid` blocks of `block` threads with no
/// dynamic shared memory. The source is self-contained (no #include), so NVRTC compiles it without
/// the toolkit's headers and the emulator compiles it as C++ behind a small prelude.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/epilogue/epilogue_op.h"
#include "schedule_space/config_space.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/template.h"
#include "support/error.h"

namespace tensortune::codegen::cuda {

/// Epilogues fused into a kernel (the fusion rules' vocabulary). Tuning measures the bare
/// operator.
struct CudaKernelOptions {
  std::vector<epilogue::EpilogueOp> epilogue;
  /// The kernel's extern "C" name; empty: the template's (kernels of one module need their own).
  std::string entry;
  /// A network kernel's run-time tensors besides data and weight (Template::extra_inputs:
  /// attention's v and mask), its first pointers after `out`, before the epilogue's operands; 0
  /// in tuning kernels, which find them in the weight buffer.
  int inputs = 0;
  /// Operands the epilogue reads: one past the largest epilogue::EpilogueOp::operand.
  int operand_count() const;
  /// + bias[channel] (operand 0) when `bias`, then relu when `relu`: what `op run` fuses.
  static CudaKernelOptions bias_relu(bool bias, bool relu);
};

/// Launch dimensions, x fastest.
struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
  int64_t count() const { return x * y * z; }
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

struct CudaKernelSource {
  std::string entry;   ///< the extern "C" kernel name
  std::string source;  ///< CUDA C
  Dim3 grid, block;
  int64_t shared_bytes = 0;  ///< static __shared__ memory per block
  /// extern __shared__ memory per block, given at launch (beyond 48 KiB the loader sets the
  /// function's opt-in attribute to it).
  int64_t dynamic_shared_bytes = 0;
  int epilogue_operands = 0;  ///< pointers after `out` (extra inputs and epilogue operands)
  /// Pointer parameters in all: 3 + epilogue_operands for a template's kernel; a network's
  /// element-wise and pooling kernels have their own (codegen/cuda/network_kernels.h).
  int arg_count = 3;
  schedule_space::KernelSignature signature;
  /// What the launch asks for before compilation (registers come from the compiled kernel).
  schedule_space::GpuKernelUsage usage() const {
    return schedule_space::launch_usage({block.x, block.y, block.z}, {grid.x, grid.y, grid.z},
                                        shared_bytes, dynamic_shared_bytes);
  }
};

/// Whether a template of the CUDA backend has an emitter in this build.
bool can_emit_cuda_kernel(std::string_view template_name);

/// The kernel of a valid config. kFailedPrecondition: the config is invalid in its space;
/// kUnimplemented: the template has no CUDA emitter.
Expected<CudaKernelSource> emit_cuda_kernel(const schedule_space::Task& task,
                                            const schedule_space::ConfigSpace& space,
                                            const schedule_space::Config& config,
                                            const CudaKernelOptions& options = {});

}  // namespace tensortune::codegen::cuda
