#pragma once
/// \file
/// Built-in loops over raw buffers for the operators of a compiled network that are data
/// movement or plain loops without a code generator yet: layout transforms, transposes, slices,
/// reshapes, global average pooling, reduce_mean/sum/max/min over adjacent axes, softmax over
/// the last axis, layer and instance normalisation, matmul of two activations (attention's)
/// and concatenation. Each runs one slice [begin, end) of its outer loop (returned by the
/// binder), so the executor splits it over its threads as it does generated kernels. Results
/// equal the interpreter's bit for bit.
#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/graph/graph.h"
#include "support/error.h"

namespace tensortune::runtime {

struct NativeKernel {
  std::function<void(int64_t begin, int64_t end)> run;
  int64_t extent = 1;
};

/// The layout transform of a float tensor of `in_shape` (NCHW, or (N, C/from, H, W, from))
/// from channel blocks of `from_block` to `to_block` (0: plain NCHW): what a layout_transform
/// node runs, for the graph tuner to time.
NativeKernel layout_transform_kernel(const graph::Shape& in_shape, int64_t from_block,
                                     int64_t to_block, const float* in, float* out);

/// Binds `node` (layout_transform, global_avg_pool2d, transpose, slice, flatten, reshape,
/// squeeze, unsqueeze, reductions over adjacent axes, last-axis softmax, matmul, concat; float32;
/// layout transforms and constant pads that crop nothing also of 8-bit integers) to its input
/// buffers (one per node input) and output buffer; kUnimplemented for other operators.
Expected<NativeKernel> bind_native(const graph::Graph& graph, const graph::Node& node,
                                   const std::vector<const float*>& inputs, float* out);

}  // namespace tensortune::runtime
