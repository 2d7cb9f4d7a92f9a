// What an ONNX file holds, read without importing it: for `tensortune check-model`, which
// lists every operator with its support before trying the import that stops at the first
// unsupported one.
#include <fstream>
#include <map>
#include <sstream>

#include "compiler/frontend/onnx_import_context.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/frontend/onnx_proto.h"

namespace tensortune::frontend {
namespace {

OnnxValueSummary value_summary(const onnx::ValueInfoProto& info) {
  OnnxValueSummary v;
  v.name = info.name();
  if (!info.type().has_tensor_type()) {
    v.dtype = "not a tensor";
    return v;
  }
  const auto& t = info.type().tensor_type();
  v.dtype = onnx_dtype_name(t.elem_type());
  if (auto d = dtype_from_onnx(t.elem_type())) v.dtype = graph::dtype_name(*d);
  v.supported_dtype = dtype_from_onnx(t.elem_type()).has_value();
  for (int i = 0; i < t.shape().dim_size(); ++i) {
    const auto& dim = t.shape().dim(i);
    v.dims.push_back(dim.has_dim_value()   ? std::to_string(dim.dim_value())
                     : dim.has_dim_param() ? dim.dim_param()
                                           : "?");
  }
  return v;
}

}  // namespace

Expected<OnnxModelSummary> summarize_onnx_file(const std::string& path, const OnnxLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open model file " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (static_cast<int64_t>(bytes.str().size()) > limits.max_model_bytes)
    return Error{ErrorCode::kOutOfRange, path + ": " + std::to_string(bytes.str().size()) +
                                             " bytes, more than the limit of " +
                                             std::to_string(limits.max_model_bytes) +
                                             " (--max-model-bytes)"};
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str()))
    return invalid_argument(path + " is not an ONNX model (protobuf parsing failed)");
  OnnxModelSummary s;
  s.ir_version = model.ir_version();
  s.producer = model.producer_name() +
               (model.producer_version().empty() ? "" : " " + model.producer_version());
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx")
      s.opset = o.version();
    else
      s.other_domains.emplace_back(o.domain(), o.version());
  }
  const auto& g = model.graph();
  std::map<std::string, int> initializer_index;
  for (const auto& init : g.initializer()) {
    ++s.initializers;
    int64_t count = 1;
    for (int64_t d : init.dims()) count *= d;
    s.parameters += count;
    s.initializer_dtypes.insert(onnx_dtype_name(init.data_type()));
    initializer_index[init.name()] = 1;
  }
  for (const auto& info : g.input())
    if (!initializer_index.count(info.name())) s.inputs.push_back(value_summary(info));
  for (const auto& info : g.output()) s.outputs.push_back(value_summary(info));
  const auto& converters = onnx_converters();
  std::map<std::string, size_t> op_index;
  for (const auto& node : g.node()) {
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    const std::string key = (default_domain ? "" : node.domain() + "::") + node.op_type();
    auto [it, inserted] = op_index.emplace(key, s.ops.size());
    if (inserted) {
      OnnxOpSummary op;
      op.op_type = key;
      op.first_node = node_label(node);
      op.supported = default_domain && converters.count(node.op_type()) != 0;
      s.ops.push_back(op);
    }
    ++s.ops[it->second].nodes;
  }
  return s;
}

}  // namespace tensortune::frontend
