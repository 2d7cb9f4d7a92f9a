#pragma once
/// \file
/// The CUDA emitters of the GPU templates (one file each) and what they share. Internal to
/// codegen/cuda: callers use emit_cuda_kernel (cuda_kernel.h).

#include <string>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/cuda/source_writer.h"

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

/// Opens a kernel as every emitter does: a comment naming the template, the workload (then
/// `note`) and the config, then `extern "C" __global__` with k's entry,
/// __launch_bounds__(threads) and the parameters of `options`. The body follows one level deeper.
void open_kernel(SourceWriter& src, const schedule_space::Task& task,
                 const schedule_space::ConfigSpace& space, const schedule_space::Config& config,
                 const CudaKernelSource& k, int64_t threads, const CudaKernelOptions& options,
                 const std::string& note = "");

/// The coordinates of a thread of a tiled convolution whose blocks are (threads_x, threads_y,
/// threads_z) threads and whose grid's z runs over images times `channel_blocks`: tz, ty, tx, the
/// thread's flat index `tid` and its image `n`.
void declare_thread_coordinates(SourceWriter& src, int64_t threads_y, int64_t threads_x,
                                int64_t channel_blocks);

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
