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
/// __launch_bounds__(threads[, min_blocks_per_sm]) and the parameters of `options`. The body
/// follows one level deeper. A minimum of blocks per SM (1) keeps ptxas from capping the
/// registers for an occupancy the kernel does not need (it spills at 40 registers otherwise).
void open_kernel(SourceWriter& src, const schedule_space::Task& task,
                 const schedule_space::ConfigSpace& space, const schedule_space::Config& config,
                 const CudaKernelSource& k, int64_t threads, const CudaKernelOptions& options,
                 const std::string& note = "", int64_t min_blocks_per_sm = 0);

/// The coordinates of a thread of a tiled convolution whose blocks are (threads_x, threads_y,
/// threads_z) threads and whose grid's z runs over images times `channel_blocks`: tz, ty, tx, the
/// thread's flat index `tid` and its image `n`.
void declare_thread_coordinates(SourceWriter& src, int64_t threads_y, int64_t threads_x,
                                int64_t channel_blocks);

/// The launch of a convolution tiled as AutoTVM's CUDA templates tile it (the schedule's f, y
/// and x splits: block, vthread, thread, inner): grid (x blocks, y blocks, images times f
/// blocks), block (x, y, f threads), the schedule's shared bytes and the template's signature.
template <typename TiledSchedule>
CudaKernelSource tiled_conv_launch(const std::string& default_entry, const TiledSchedule& s,
                                   const schedule_space::Task& task,
                                   const schedule_space::ConfigSpace& space,
                                   const schedule_space::Config& config,
                                   const CudaKernelOptions& options) {
  const auto& w = std::get<schedule_space::Conv2dWorkload>(task.workload);
  CudaKernelSource k;
  k.entry = options.entry.empty() ? default_entry : options.entry;
  k.grid = {s.x[0], s.y[0], w.batch * s.f[0]};
  k.block = {s.x[2], s.y[2], s.f[2]};
  k.shared_bytes = s.shared_bytes(w);
  k.signature = schedule_space::template_of(task).signature(task, space, config);
  return k;
}

/// Opens the kernel of such a launch: its input and weight tiles in shared memory (floats), the
/// thread's coordinates and its tile's origin (output channel f0, row y0, column x0).
template <typename TiledSchedule>
void open_tiled_conv(SourceWriter& src, const TiledSchedule& s, const CudaKernelSource& k,
                     int64_t input_tile, int64_t weight_tile, const schedule_space::Task& task,
                     const schedule_space::ConfigSpace& space, const schedule_space::Config& config,
                     const CudaKernelOptions& options) {
  open_kernel(src, task, space, config, k, s.threads(), options);
  src.line("__shared__ float input_tile[" + num(input_tile) + "];");
  src.line("__shared__ float weight_tile[" + num(weight_tile) + "];");
  declare_thread_coordinates(src, s.y[2], s.x[2], s.f[0]);
  src.line("const int f0 = (blockIdx.z % " + num(s.f[0]) + ") * " + num(s.tile_f()) + ";");
  src.line("const int y0 = blockIdx.y * " + num(s.tile_y()) + ";");
  src.line("const int x0 = blockIdx.x * " + num(s.tile_x()) + ";");
}

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
CudaKernelSource emit_dense_tensorcore(const schedule_space::Task& task,
                                       const schedule_space::ConfigSpace& space,
                                       const schedule_space::Config& config,
                                       const CudaKernelOptions& options);
CudaKernelSource emit_conv2d_nchw_tensorcore(const schedule_space::Task& task,
                                             const schedule_space::ConfigSpace& space,
                                             const schedule_space::Config& config,
                                             const CudaKernelOptions& options);
CudaKernelSource emit_batch_matmul_tensorcore(const schedule_space::Task& task,
                                              const schedule_space::ConfigSpace& space,
                                              const schedule_space::Config& config,
                                              const CudaKernelOptions& options);
CudaKernelSource emit_batch_matmul(const schedule_space::Task& task,
                                   const schedule_space::ConfigSpace& space,
                                   const schedule_space::Config& config,
                                   const CudaKernelOptions& options);
CudaKernelSource emit_attention(const schedule_space::Task& task,
                                const schedule_space::ConfigSpace& space,
                                const schedule_space::Config& config,
                                const CudaKernelOptions& options);

}  // namespace tensortune::codegen::cuda
