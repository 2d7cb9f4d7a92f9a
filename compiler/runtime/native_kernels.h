#pragma once
/// \file
/// Built-in loops over raw buffers for the operators of a compiled network that are data
/// movement rather than arithmetic: layout transforms, reshapes, global average pooling. Each runs
/// one slice [begin, end) of its outer loop (returned by the binder), so the executor splits it
/// over its threads as it does generated kernels. Results equal the interpreter's bit for bit.
#include <cstdint>
#include <functional>

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

/// Binds `node` (layout_transform, global_avg_pool2d, flatten, reshape, squeeze,
/// unsqueeze; float32) to its input and output buffers; kUnimplemented for other operators.
Expected<NativeKernel> bind_native(const graph::Graph& graph, const graph::Node& node,
                                   const float* in, float* out);

}  // namespace tensortune::runtime
