#pragma once
/// \file
/// Internal to the ONNX exporter: the attribute writers, and the mapping of the operators that
/// imported models bring beyond the zoo's (onnx_export_ops.cc), in their opset 17 forms.
#include <functional>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_proto.h"
#include "compiler/graph/graph.h"

namespace tensortune::frontend {

inline void add_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void add_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(v);
}
inline void add_float(onnx::NodeProto* n, const std::string& name, double v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(static_cast<float>(v));
}
inline void add_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_STRING);
  a->set_s(v);
}

/// What an operator's mapping needs from the exporter.
struct ExportSink {
  /// A node of `op_type` for `node`, its inputs and output already named.
  std::function<onnx::NodeProto*(const graph::Node&, const std::string&)> emit;
  /// Adds an initializer; returns its name.
  std::function<std::string(const std::string&, graph::Tensor)> initializer;
  /// Unique ONNX names by value id.
  const std::vector<std::string>& names;
};

/// Exports `n` when it is one of the imported models' operators; false when it has no mapping.
Expected<bool> export_imported_op(const graph::Graph& g, const graph::Node& n, ExportSink& sink);

}  // namespace tensortune::frontend
