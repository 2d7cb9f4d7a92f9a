// The built-in data movement against the interpreter: layout transforms for every pair of channel
// blocks of a 48-channel tensor (plain NCHW included) and constant pads, on float and on byte
// data (quantized activations between int8 kernels), run in two slices as the executor's
// threads run them.
#include "compiler/runtime/native_kernels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/graph/interpreter.h"
#include "compiler/graph/op_attrs.h"

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

/// The graph's single node run by its native kernel on raw buffers at the executor's widths
/// (4 bytes a float, 1 an 8-bit integer), in two slices as the executor's threads run it, equals
/// the interpreter element for element.
void expect_native_equals_interpreter(const Graph& g, const Tensor& input,
                                      const std::string& what) {
  auto want = graph::interpret(g, {{"x", input}});
  ASSERT_TRUE(want) << what << ": " << want.error().message;
  const Tensor& ref = (*want)[0];
  const DType dtype = input.dtype;
  const bool bytes = graph::buffer_element_size(dtype) == 1;
  const size_t width = graph::buffer_element_size(dtype);
  std::vector<uint8_t> in_bytes(static_cast<size_t>(input.size()) * width);
  std::vector<uint8_t> out_bytes(static_cast<size_t>(ref.size()) * width, 0xAB);
  for (int64_t i = 0; i < input.size(); ++i) {
    if (bytes)
      in_bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(input.i64[static_cast<size_t>(i)]);
    else
      std::memcpy(&in_bytes[static_cast<size_t>(i) * 4], &input.f32[static_cast<size_t>(i)], 4);
  }
  auto kernel = bind_native(g, g.nodes()[0], {reinterpret_cast<const float*>(in_bytes.data())},
                            reinterpret_cast<float*>(out_bytes.data()));
  ASSERT_TRUE(kernel) << what << ": " << kernel.error().message;
  const int64_t half = kernel->extent / 2;
  kernel->run(half, kernel->extent);
  kernel->run(0, half);
  for (int64_t i = 0; i < ref.size(); ++i) {
    if (bytes) {
      const uint8_t b = out_bytes[static_cast<size_t>(i)];
      const int64_t got = dtype == DType::kInt8 ? int64_t{static_cast<int8_t>(b)} : int64_t{b};
      ASSERT_EQ(got, ref.i64[static_cast<size_t>(i)]) << what << " at " << i;
    } else {
      float v;
      std::memcpy(&v, &out_bytes[static_cast<size_t>(i) * 4], 4);
      ASSERT_EQ(v, ref.f32[static_cast<size_t>(i)]) << what << " at " << i;
    }
  }
}

/// Distinct values of the dtype's range at every position.
Tensor pattern(DType dtype, const Shape& shape) {
  Tensor t = Tensor::zeros(dtype, shape);
  for (int64_t i = 0; i < t.size(); ++i) {
    if (dtype == DType::kUInt8)
      t.i64[static_cast<size_t>(i)] = (i * 37 + 11) % 256;
    else if (dtype == DType::kInt8)
      t.i64[static_cast<size_t>(i)] = (i * 37 + 11) % 256 - 128;
    else
      t.f32[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f - 7.0f;
  }
  return t;
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
        expect_native_equals_interpreter(g, pattern(dtype, in_shape), what);
      }
}

// Constant padding (an int8 kernel's input channels padded to 4 with the zero point, a model's
// Pad) against the interpreter: on any axis, the first and the last included, of float, uint8
// and int8 data, at ranks 1 to 5, with a fill value of the dtype.
TEST(NativeKernels, ConstantPadsEqualTheInterpreter) {
  struct Case {
    Shape shape;
    graph::Ints pads;
  };
  const std::vector<Case> cases = {
      {{1, 3, 4, 5}, {0, 0, 0, 0, 0, 1, 0, 0}},  // 3 channels to 4
      {{2, 1, 3, 2}, {0, 0, 0, 0, 0, 3, 0, 0}},  // 1 channel to 4
      {{2, 3, 4, 5}, {1, 2, 0, 3, 2, 0, 1, 1}},  // every axis, the last at both ends
      {{7}, {2, 3}},
      {{3, 4}, {0, 0, 0, 0}},  // a copy
      {{2, 2, 2, 3, 4}, {0, 1, 0, 0, 2, 1, 0, 2, 1, 0}},
  };
  for (DType dtype : {DType::kFloat32, DType::kUInt8, DType::kInt8})
    for (const Case& c : cases) {
      graph::PadAttrs pad;
      pad.pads = c.pads;
      pad.value = dtype == DType::kFloat32 ? -1.5 : dtype == DType::kUInt8 ? 128 : -3;
      Graph g;
      const auto x = g.add_input("x", {dtype, c.shape});
      const auto y = g.add_node(OpKind::kPad, "p", {x}, graph::to_attrs(pad));
      ASSERT_TRUE(y);
      g.add_output(*y);
      expect_native_equals_interpreter(
          g, pattern(dtype, c.shape),
          std::string(graph::dtype_name(dtype)) + ", case " + std::to_string(&c - cases.data()));
    }
}

}  // namespace
}  // namespace tensortune::runtime
