#pragma once
/// \file
/// The operators of the graph IR (the one list is ops.def) and their attributes' storage. Every
/// node has one output. The attributes, typed and with their defaults, are op_attrs.h's; the
/// inputs, for importers, passes and the interpreter alike:
///
///   conv2d           data NCHW, weight OIHW with I = C/groups
///   conv2d_nchwc     data NCHW[ic_bn]c, weight OIHW[ic_bn]i[oc_bn]o (depthwise:
///                    O(1)HW(1)i[oc_bn]o with ic_bn == oc_bn); output NCHW[oc_bn]c
///   dense            x [M, K], weight [N, K] -> [M, N]
///   matmul           numpy matmul of two tensors of rank >= 2 (batch dims broadcast)
///   bias_add         x, bias 1-D
///   batch_norm       x, gamma, beta, mean, var along axis 1
///   gather           data, int64 indices
///   the others       one input (add, subtract, multiply, divide: two, numpy broadcasting;
///                    concat: one or more)
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tensortune::graph {

enum class OpKind {
#define TT_OP(kind, name, attrs, category) kind,
#include "compiler/graph/ops.def"
};

/// Every operator, in ops.def's order.
const std::vector<OpKind>& all_ops();

/// "conv2d", "max_pool2d", ... (the names the printer shows and artifacts store).
const char* op_name(OpKind op);
/// The operator of that name, or nothing.
std::optional<OpKind> op_from_name(std::string_view name);

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
