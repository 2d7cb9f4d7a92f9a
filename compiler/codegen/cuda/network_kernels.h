#pragma once
/// \file
/// CUDA kernels for the steps of a compiled network that no tuning template computes:
/// element-wise chains, pooling and depthwise convolution. Each takes the CPU network kernel's
/// argument order (codegen/llvm/network_kernels.h), so that one step's arguments serve both back
/// ends:
///   element-wise      out, then the operands in program order
///   max pool          out, data (N, C/b, H, W, b)
///   global avg pool   out, data (N, C, H, W) or (N, C/b, H, W, b)
///   depthwise conv    data, weight (C/b, 1, KH, KW, 1, b), out, then the epilogue's operands
///   layout transform  out, data: NCHW[from]c to NCHW[to]c (a block of 0 is plain NCHW)
///   strided copy      out, data: a transpose or a slice
///   softmax           out, in: rows of spec.len, the last axis
///   layer norm        out, in, scale, then bias where spec.has_bias
/// The row kernels (softmax, layer norm) run a block per row, its threads reducing in shared
/// memory. The others run one thread per output element in a grid-stride loop (these steps are
/// memory-bound; a schedule to tune would buy little), and results equal to the CPU's: the same
/// operation order, sigmoid and averages in double as the CPU kernels compute them.

#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/kernel_spec.h"

namespace tensortune::codegen::cuda {

CudaKernelSource emit_elementwise_kernel(const ElementwiseKernelSpec& spec,
                                         const std::string& entry);
CudaKernelSource emit_max_pool_kernel(const MaxPoolKernelSpec& spec, const std::string& entry);
CudaKernelSource emit_global_avg_pool_kernel(const std::vector<int64_t>& in_shape,
                                             const std::string& entry);
/// `in_shape` is the input's (N, C, H, W) or (N, C/from, H, W, from).
CudaKernelSource emit_layout_transform_kernel(const std::vector<int64_t>& in_shape,
                                              int64_t from_block, int64_t to_block,
                                              const std::string& entry);
/// out[coordinates c of out_shape] = data[base + sum of c[d] * in_strides[d]]: a transpose or a
/// slice as the CPU's native loops compute it.
CudaKernelSource emit_strided_copy_kernel(const std::vector<int64_t>& out_shape,
                                          const std::vector<int64_t>& in_strides, int64_t base,
                                          const std::string& entry);
/// spec.depthwise; the block b is spec.block (1 for NCHW).
CudaKernelSource emit_depthwise_conv_kernel(const DepthwiseKernelSpec& spec,
                                            const std::string& entry);

/// Softmax and layer norm as the interpreter computes them (row_kernels.cc).
CudaKernelSource emit_softmax_kernel(const SoftmaxKernelSpec& spec, const std::string& entry);
CudaKernelSource emit_layer_norm_kernel(const LayerNormKernelSpec& spec, const std::string& entry);

/// Threads per block of these kernels (at most, for the row kernels).
inline constexpr int64_t kNetworkKernelThreads = 256;

}  // namespace tensortune::codegen::cuda
