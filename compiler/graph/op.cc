#include "compiler/graph/op.h"

#include <sstream>

namespace tensortune::graph {

const char* op_name(OpKind op) {
  switch (op) {
    case OpKind::kConv2d:
      return "conv2d";
    case OpKind::kConv2dNCHWc:
      return "conv2d_nchwc";
    case OpKind::kDense:
      return "dense";
    case OpKind::kMatMul:
      return "matmul";
    case OpKind::kBiasAdd:
      return "bias_add";
    case OpKind::kBatchNorm:
      return "batch_norm";
    case OpKind::kRelu:
      return "relu";
    case OpKind::kClip:
      return "clip";
    case OpKind::kSigmoid:
      return "sigmoid";
    case OpKind::kHardSigmoid:
      return "hard_sigmoid";
    case OpKind::kHardSwish:
      return "hard_swish";
    case OpKind::kAdd:
      return "add";
    case OpKind::kSubtract:
      return "subtract";
    case OpKind::kMultiply:
      return "multiply";
    case OpKind::kDivide:
      return "divide";
    case OpKind::kMaxPool2d:
      return "max_pool2d";
    case OpKind::kAvgPool2d:
      return "avg_pool2d";
    case OpKind::kGlobalAvgPool2d:
      return "global_avg_pool2d";
    case OpKind::kFlatten:
      return "flatten";
    case OpKind::kReshape:
      return "reshape";
    case OpKind::kTranspose:
      return "transpose";
    case OpKind::kConcat:
      return "concat";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kLayoutTransform:
      return "layout_transform";
    case OpKind::kShape:
      return "shape";
    case OpKind::kCast:
      return "cast";
    case OpKind::kSlice:
      return "slice";
    case OpKind::kGather:
      return "gather";
    case OpKind::kUnsqueeze:
      return "unsqueeze";
    case OpKind::kSqueeze:
      return "squeeze";
    case OpKind::kIdentity:
      return "identity";
  }
  return "?";
}

bool is_unary_elementwise(OpKind op) {
  switch (op) {
    case OpKind::kRelu:
    case OpKind::kClip:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kIdentity:
      return true;
    default:
      return false;
  }
}

bool is_binary_elementwise(OpKind op) {
  return op == OpKind::kAdd || op == OpKind::kSubtract || op == OpKind::kMultiply ||
         op == OpKind::kDivide;
}

bool is_anchor(OpKind op) {
  return op == OpKind::kConv2d || op == OpKind::kConv2dNCHWc || op == OpKind::kDense ||
         op == OpKind::kMatMul;
}

int64_t Attrs::get_int(const std::string& name, int64_t fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (auto* d = std::get_if<double>(&it->second)) return static_cast<int64_t>(*d);
  return fallback;
}

double Attrs::get_float(const std::string& name, double fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return fallback;
}

std::vector<int64_t> Attrs::get_ints(const std::string& name, std::vector<int64_t> fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  return fallback;
}

std::string Attrs::get_string(const std::string& name, std::string fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  return fallback;
}

std::string attrs_string(const Attrs& attrs) {
  std::ostringstream os;
  bool first = true;
  for (const auto& [name, value] : attrs.items()) {
    if (!first) os << " ";
    first = false;
    os << name << "=";
    if (auto* i = std::get_if<int64_t>(&value)) {
      os << *i;
    } else if (auto* d = std::get_if<double>(&value)) {
      os << *d;
    } else if (auto* v = std::get_if<std::vector<int64_t>>(&value)) {
      os << "[";
      for (size_t k = 0; k < v->size(); ++k) os << (k ? "," : "") << (*v)[k];
      os << "]";
    } else {
      os << '"' << std::get<std::string>(value) << '"';
    }
  }
  return os.str();
}

}  // namespace tensortune::graph
