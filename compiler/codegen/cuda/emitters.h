#pragma once
/// \file
/// The CUDA emitters of the GPU templates (one file each) and what they share. Internal to
/// codegen/cuda: callers use emit_cuda_kernel (cuda_kernel.h).

#include <string>

#include "compiler/codegen/cuda/cuda_kernel.h"

namespace tensortune::codegen::cuda {

/// The parameter list of a kernel with these epilogue operands (cuda_kernel.h's ABI).
std::string kernel_params(const CudaKernelOptions& options);

/// `value` with the fused epilogue applied in order; `channel` indexes channel operands,
/// `index` (the output element's offset) tensor operands.
std::string epilogue(const std::string& value, const std::string& channel, const std::string& index,
                     const CudaKernelOptions& options);

/// How a reduction loop is unrolled under AutoTVM's (auto_unroll_max_step, unroll_explicit):
/// "#pragma unroll 1" when the nest is not to be unrolled, "#pragma unroll" when the
/// generator unrolls it, "" when the CUDA compiler chooses.
std::string unroll_pragma(int64_t nest_steps, int64_t auto_unroll_max_step, bool unroll_explicit);

using EmitFn = CudaKernelSource (*)(const schedule_space::Task&, const schedule_space::ConfigSpace&,
                                    const schedule_space::Config&, const CudaKernelOptions&);

CudaKernelSource emit_conv2d_nchw(const schedule_space::Task& task,
                                  const schedule_space::ConfigSpace& space,
                                  const schedule_space::Config& config,
                                  const CudaKernelOptions& options);
CudaKernelSource emit_conv2d_nchwc(const schedule_space::Task& task,
                                   const schedule_space::ConfigSpace& space,
                                   const schedule_space::Config& config,
                                   const CudaKernelOptions& options);
CudaKernelSource emit_conv2d_nchw_winograd(const schedule_space::Task& task,
                                           const schedule_space::ConfigSpace& space,
                                           const schedule_space::Config& config,
                                           const CudaKernelOptions& options);
CudaKernelSource emit_depthwise_conv2d_nchw(const schedule_space::Task& task,
                                            const schedule_space::ConfigSpace& space,
                                            const schedule_space::Config& config,
                                            const CudaKernelOptions& options);
CudaKernelSource emit_dense_small_batch(const schedule_space::Task& task,
                                        const schedule_space::ConfigSpace& space,
                                        const schedule_space::Config& config,
                                        const CudaKernelOptions& options);
CudaKernelSource emit_dense_large_batch(const schedule_space::Task& task,
                                        const schedule_space::ConfigSpace& space,
                                        const schedule_space::Config& config,
                                        const CudaKernelOptions& options);

}  // namespace tensortune::codegen::cuda
