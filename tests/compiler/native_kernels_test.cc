// The built-in layout transform against the interpreter's, for every pair of channel blocks of
// a 48-channel tensor (plain NCHW included), on float and on byte data (quantized activations
// between int8 kernels), run in two slices as the executor's threads run it.
#include "compiler/runtime/native_kernels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/graph/interpreter.h"

namespace tensortune::runtime {
namespace {

using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;

Shape blocked(const Shape& nchw, int64_t block) {
  if (block == 0) return nchw;
  return {nchw[0], nchw[1] / block, nchw[2], nchw[3], block};
}

TEST(NativeKernels, LayoutTransformsEqualTheInterpreterForEveryPairOfBlocks) {
  const Shape nchw = {2, 48, 3, 5};
  const std::vector<int64_t> blocks = {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 48};
  for (DType dtype : {DType::kFloat32, DType::kUInt8})
    for (int64_t from : blocks)
      for (int64_t to : blocks) {
        if (from == to) continue;
        const std::string what = std::string(dtype == DType::kUInt8 ? "uint8 " : "float ") +
                                 std::to_string(from) + " -> " + std::to_string(to);
        Graph g;
        const Shape in_shape = blocked(nchw, from);
        const auto x = g.add_input("x", {dtype, in_shape});
        const auto y = g.add_node(OpKind::kLayoutTransform, "t", {x},
                                  graph::Attrs{{"from_block", from}, {"to_block", to}});
        ASSERT_TRUE(y) << what;
        g.add_output(*y);
        Tensor input = Tensor::zeros(dtype, in_shape);
        for (int64_t i = 0; i < input.size(); ++i) {
          if (dtype == DType::kUInt8)
            input.i64[static_cast<size_t>(i)] = (i * 37 + 11) % 256;
          else
            input.f32[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f - 7.0f;
        }
        auto want = graph::interpret(g, {{"x", input}});
        ASSERT_TRUE(want) << what << ": " << want.error().message;
        const Tensor& ref = (*want)[0];

        // Raw buffers at the executor's widths: 4 bytes a float, 1 a uint8.
        const size_t width = graph::buffer_element_size(dtype);
        std::vector<uint8_t> in_bytes(static_cast<size_t>(input.size()) * width);
        std::vector<uint8_t> out_bytes(static_cast<size_t>(ref.size()) * width, 0xAB);
        for (int64_t i = 0; i < input.size(); ++i) {
          if (dtype == DType::kUInt8)
            in_bytes[static_cast<size_t>(i)] =
                static_cast<uint8_t>(input.i64[static_cast<size_t>(i)]);
          else
            std::memcpy(&in_bytes[static_cast<size_t>(i) * 4], &input.f32[static_cast<size_t>(i)],
                        4);
        }
        auto kernel =
            bind_native(g, g.nodes()[0], {reinterpret_cast<const float*>(in_bytes.data())},
                        reinterpret_cast<float*>(out_bytes.data()));
        ASSERT_TRUE(kernel) << what << ": " << kernel.error().message;
        const int64_t half = kernel->extent / 2;
        kernel->run(half, kernel->extent);
        kernel->run(0, half);
        for (int64_t i = 0; i < ref.size(); ++i) {
          if (dtype == DType::kUInt8) {
            ASSERT_EQ(out_bytes[static_cast<size_t>(i)], ref.i64[static_cast<size_t>(i)])
                << what << " at " << i;
          } else {
            float v;
            std::memcpy(&v, &out_bytes[static_cast<size_t>(i) * 4], 4);
            ASSERT_EQ(v, ref.f32[static_cast<size_t>(i)]) << what << " at " << i;
          }
        }
      }
}

}  // namespace
}  // namespace tensortune::runtime
