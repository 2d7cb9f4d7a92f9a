#pragma once
/// \file
/// The operators of the graph IR and their attributes. Every node has one output. Attribute
/// conventions are fixed here once, for importers, passes and the interpreter alike:
///
///   conv2d           inputs (data NCHW, weight OIHW with I = C/groups); strides[2],
///                    pads[4] = (top, left, bottom, right), dilations[2], groups
///   conv2d_nchwc     inputs (data NCHW[ic_bn]c, weight OIHW[ic_bn]i[oc_bn]o; for depthwise
///                    O(1)HW(1)i[oc_bn]o with ic_bn == oc_bn); conv2d's attributes + ic_bn,
///                    oc_bn; output NCHW[oc_bn]c
///   dense            inputs (x [M, K], weight [N, K]) -> [M, N]
///   matmul           numpy matmul of two tensors of rank >= 2 (batch dims broadcast)
///   bias_add         inputs (x, bias 1-D), axis
///   batch_norm       inputs (x, gamma, beta, mean, var) along axis 1; epsilon
///   clip             min, max;   hard_sigmoid alpha, beta
///   max_pool2d       kernel[2], strides[2], pads[4], dilations[2], ceil_mode, block
///   avg_pool2d       as max_pool2d + count_include_pad
///   global_avg_pool2d  block (0: NCHW, b: NCHW[b]c)
///   flatten axis; reshape shape (resolved, all positive); transpose perm; concat axis;
///   softmax axis; layout_transform from_block, to_block (0 means plain NCHW);
///   shape start, end; cast to (DType); slice starts, ends, axes, steps (resolved: axes
///   non-negative); gather axis; unsqueeze axes; squeeze axes
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tensortune::graph {

enum class OpKind {
  kConv2d,
  kConv2dNCHWc,
  kDense,
  kMatMul,
  kBiasAdd,
  kBatchNorm,
  kRelu,
  kClip,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kMaxPool2d,
  kAvgPool2d,
  kGlobalAvgPool2d,
  kFlatten,
  kReshape,
  kTranspose,
  kConcat,
  kSoftmax,
  kLayoutTransform,
  kShape,
  kCast,
  kSlice,
  kGather,
  kUnsqueeze,
  kSqueeze,
  kIdentity,
};

/// "conv2d", "max_pool2d", ... (the names the printer shows).
const char* op_name(OpKind op);

/// Unary element-wise (relu, clip, sigmoid, hard_sigmoid, hard_swish, identity).
bool is_unary_elementwise(OpKind op);
/// add, subtract, multiply, divide (numpy broadcasting).
bool is_binary_elementwise(OpKind op);
/// conv2d, conv2d_nchwc, dense, matmul: the anchors that fusion groups form around.
bool is_anchor(OpKind op);

using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::string>;

/// Named attributes with typed getters; a getter given a default returns it when absent.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  void set(const std::string& name, AttrValue value) { map_[name] = std::move(value); }
  bool has(const std::string& name) const { return map_.count(name) != 0; }

  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_float(const std::string& name, double fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::string get_string(const std::string& name, std::string fallback = "") const;

  const std::map<std::string, AttrValue>& items() const { return map_; }

 private:
  std::map<std::string, AttrValue> map_;
};

/// "strides=[2,2] pads=[3,3,3,3]" in name order.
std::string attrs_string(const Attrs& attrs);

}  // namespace tensortune::graph
