#include "compiler/runtime/native_kernels.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/graph/op_attrs.h"

namespace tensortune::runtime {

using graph::OpKind;
using graph::Shape;

namespace {

/// NCHW[fb]c -> NCHW[tb]c (a block of 0 means plain NCHW), one (n, output channel chunk) per
/// iteration.
NativeKernel layout_transform(const Shape& in_shape, int64_t from_block, int64_t to_block,
                              const float* in, float* out) {
  const int64_t N = in_shape[0], H = in_shape[2], W = in_shape[3];
  const int64_t C = from_block ? in_shape[1] * from_block : in_shape[1];
  const int64_t fb = std::max<int64_t>(from_block, 1), tb = std::max<int64_t>(to_block, 1);
  const int64_t HW = H * W, chunks = C / tb;
  if (tb < fb && tb < 4) {
    // To blocks of 1-3 (short output runs): input order (contiguous reads), each input block
    // scattered to fb / tb output blocks at once.
    const int64_t in_chunks = C / fb;
    return {[=](int64_t begin, int64_t end) {
              for (int64_t f = begin; f < end; ++f) {
                const int64_t n = f / in_chunks, chunk = f % in_chunks;
                const float* i = in + f * HW * fb;
                for (int64_t k = 0; k < fb; ++k) {
                  const int64_t c = chunk * fb + k;
                  float* o = out + ((n * (C / tb) + c / tb) * HW) * tb + c % tb;
                  for (int64_t hw = 0; hw < HW; ++hw) o[hw * tb] = i[hw * fb + k];
                }
              }
            },
            N * in_chunks};
  }
  // Output order (contiguous writes); for each position the tb channels come from
  // ceil(tb / fb) runs of contiguous input.
  return {[=](int64_t begin, int64_t end) {
            for (int64_t f = begin; f < end; ++f) {
              const int64_t n = f / chunks, chunk = f % chunks;
              float* o = out + f * HW * tb;
              const int64_t c0 = chunk * tb;
              if (fb == 1) {  // from plain NCHW: tb channel planes interleaved
                for (int64_t j = 0; j < tb; ++j) {
                  const float* i = in + (n * C + c0 + j) * HW;
                  for (int64_t hw = 0; hw < HW; ++hw) o[hw * tb + j] = i[hw];
                }
                continue;
              }
              for (int64_t hw = 0; hw < HW; ++hw) {
                for (int64_t j = 0; j < tb;) {
                  const int64_t c = c0 + j;
                  const int64_t run =
                      std::min(fb - c % fb, tb - j);  // contiguous in the input block
                  const float* i = in + ((n * (C / fb) + c / fb) * HW + hw) * fb + c % fb;
                  for (int64_t k = 0; k < run; ++k) o[hw * tb + j + k] = i[k];
                  j += run;
                }
              }
            }
          },
          N * chunks};
}

/// Mean over H x W in double, element by element in the interpreter's order.
NativeKernel global_avg_pool(const Shape& in_shape, const float* in, float* out) {
  const int64_t NC = in_shape[0] * in_shape[1], HW = in_shape[2] * in_shape[3];
  const int64_t B = in_shape.size() == 5 ? in_shape[4] : 1;
  return {[=](int64_t begin, int64_t end) {
            std::vector<double> sum(static_cast<size_t>(B));
            for (int64_t nc = begin; nc < end; ++nc) {
              std::fill(sum.begin(), sum.end(), 0.0);
              const float* x = in + nc * HW * B;
              for (int64_t i = 0; i < HW; ++i)
                for (int64_t b = 0; b < B; ++b) sum[b] += x[i * B + b];
              for (int64_t b = 0; b < B; ++b)
                out[nc * B + b] = static_cast<float>(sum[b] / double(HW));
            }
          },
          NC};
}

}  // namespace

NativeKernel layout_transform_kernel(const Shape& in_shape, int64_t from_block, int64_t to_block,
                                     const float* in, float* out) {
  return layout_transform(in_shape, from_block, to_block, in, out);
}

Expected<NativeKernel> bind_native(const graph::Graph& g, const graph::Node& node, const float* in,
                                   float* out) {
  const Shape& in_shape = g.type(node.inputs[0]).shape;
  const Shape& out_shape = g.type(node.output).shape;
  switch (node.op) {
    case OpKind::kLayoutTransform: {
      const auto a = graph::attrs_as<graph::LayoutTransformAttrs>(node.attrs);
      return layout_transform(in_shape, a.from_block, a.to_block, in, out);
    }
    case OpKind::kGlobalAvgPool2d:
      return global_avg_pool(in_shape, in, out);
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze: {
      const size_t bytes = static_cast<size_t>(graph::num_elements(out_shape)) * sizeof(float);
      return NativeKernel{[=](int64_t, int64_t) { std::memcpy(out, in, bytes); }, 1};
    }
    default:
      return Error{ErrorCode::kUnimplemented, std::string("no native kernel for ") +
                                                  graph::op_name(node.op) + " (node " + node.name +
                                                  ")"};
  }
}

}  // namespace tensortune::runtime
