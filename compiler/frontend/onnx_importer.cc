#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "compiler/frontend/onnx_import_context.h"
#include "compiler/frontend/onnx_io.h"

namespace tensortune::frontend {
namespace {

using graph::ValueId;

// The fixed shape of a graph input: the user's, or the model's when every dim is static.
Expected<graph::Shape> input_shape(const onnx::ValueInfoProto& info,
                                   const OnnxImportOptions& options) {
  auto given = options.input_shapes.find(info.name());
  const auto& tensor_type = info.type().tensor_type();
  if (given != options.input_shapes.end()) {
    if (tensor_type.has_shape() && tensor_type.shape().dim_size() != 0 &&
        tensor_type.shape().dim_size() != static_cast<int>(given->second.size()))
      return invalid_argument(
          "--input-shape " + info.name() + "=" + shape_to_string(given->second) + " has rank " +
          std::to_string(given->second.size()) + ", the model's input has rank " +
          std::to_string(tensor_type.shape().dim_size()));
    for (int64_t d : given->second)
      if (d < 0)
        return invalid_argument("--input-shape " + info.name() + " has dimension " +
                                std::to_string(d));
    return given->second;
  }
  graph::Shape shape;
  for (int i = 0; i < tensor_type.shape().dim_size(); ++i) {
    const auto& dim = tensor_type.shape().dim(i);
    if (!dim.has_dim_value() || dim.dim_value() < 0) {
      const std::string label = dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : "";
      return invalid_argument("input '" + info.name() + "' dimension " + std::to_string(i) + label +
                              " is dynamic: fix it with --input-shape " + info.name() + "=AxBx...");
    }
    shape.push_back(dim.dim_value());
  }
  return shape;
}

Expected<graph::Graph> import_model(const onnx::ModelProto& model, const std::string& what,
                                    const OnnxImportOptions& options) {
  if (!model.has_graph()) return invalid_argument(what + " has no graph (not an ONNX model?)");
  int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset == 0) return invalid_argument(what + " does not import the default ONNX opset");
  const onnx::GraphProto& gp = model.graph();
  graph::Graph g(gp.name().empty() ? "onnx" : gp.name());
  ImportContext ctx(g, opset);

  std::set<std::string> initializer_names;
  for (const auto& init : gp.initializer()) {
    auto t = tensor_from_proto(init);
    if (!t) return t.error().with_context(what + ": initializer '" + init.name() + "'");
    initializer_names.insert(init.name());
    ctx.note_storage_dtype(init.name(), t->dtype);
    ctx.bind(init.name(), g.add_constant(init.name(), in_compute_dtype(std::move(t).value())));
  }
  std::set<std::string> input_names;
  for (const auto& info : gp.input())
    if (!initializer_names.count(info.name())) input_names.insert(info.name());
  for (const auto& [name, shape] : options.input_shapes)
    if (!input_names.count(name)) {
      std::string known;
      for (const auto& n : input_names) known += (known.empty() ? "" : ", ") + n;
      return invalid_argument("--input-shape names '" + name + "', which is not an input of " +
                              what + " (its inputs: " + known + ")");
    }
  for (const auto& info : gp.input()) {
    if (initializer_names.count(info.name())) continue;
    if (auto frozen = options.frozen_inputs.find(info.name());
        frozen != options.frozen_inputs.end()) {
      ctx.note_storage_dtype(info.name(), frozen->second.dtype);
      ctx.bind(info.name(), g.add_constant(info.name(), in_compute_dtype(frozen->second)));
      continue;
    }
    if (!info.type().has_tensor_type())
      return unimplemented(what + ": input '" + info.name() +
                           "' is not a tensor (sequences, maps and optionals are not supported)");
    const int32_t elem = info.type().tensor_type().elem_type();
    const auto dtype = dtype_from_onnx(elem);
    if (!dtype)
      return unimplemented(what + ": input '" + info.name() + "' has dtype " +
                           onnx_dtype_name(elem) + " (supported: " + kSupportedOnnxDTypes + ")");
    auto shape = input_shape(info, options);
    if (!shape) return shape.error().with_context(what);
    const ValueId in = g.add_input(info.name(), {*dtype, std::move(shape).value()});
    ctx.note_storage_dtype(info.name(), *dtype);
    if (graph::compute_dtype(*dtype) == *dtype) {
      ctx.bind(info.name(), in);
      continue;
    }
    // float16, bfloat16, float64 inputs: converted once, computed on in float32.
    auto widened = ctx.emit(graph::OpKind::kCast, info.name() + ".to_float32", {in},
                            graph::Attrs{{"to", static_cast<int64_t>(graph::DType::kFloat32)}});
    if (!widened) return widened.error().with_context(what);
    ctx.bind(info.name(), *widened);
  }

  const auto& converters = onnx_converters();
  for (const auto& node : gp.node()) {
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    auto it = converters.find(node.op_type());
    if (!default_domain || it == converters.end())
      return unimplemented(what + ": unsupported operator '" +
                           (default_domain ? "" : node.domain() + "::") + node.op_type() +
                           "' (node '" + node_label(node) + "', opset " + std::to_string(opset) +
                           ")");
    // Every operator we import has at least one output; converters may rely on output(0).
    if (node.output_size() < 1)
      return invalid_argument(what + ": node '" + node_label(node) + "' (" + node.op_type() +
                              ") has no output");
    Status s = it->second(ctx, node);
    if (!s) return s.error().with_context(what + " (opset " + std::to_string(opset) + ")");
  }
  for (const auto& out : gp.output()) {
    auto id = ctx.find(out.name());
    if (!id)
      return invalid_argument(what + ": graph output '" + out.name() + "' is never produced");
    // An output ONNX types float16, bfloat16 or float64 was computed in float32: converted
    // back at the edge.
    const auto declared = dtype_from_onnx(out.type().tensor_type().elem_type());
    if (declared && graph::is_float(*declared) && *declared != g.type(*id).dtype &&
        graph::is_float(g.type(*id).dtype)) {
      auto narrowed =
          ctx.emit(graph::OpKind::kCast, out.name() + ".to_" + graph::dtype_name(*declared), {*id},
                   graph::Attrs{{"to", static_cast<int64_t>(*declared)}});
      if (!narrowed) return narrowed.error().with_context(what);
      id = *narrowed;
    }
    g.add_output(*id, out.name());
  }
  if (g.outputs().empty()) return invalid_argument(what + " has no outputs");
  return g;
}

Status check_count(const std::string& what, int64_t count, const char* things, int64_t limit,
                   const char* flag) {
  if (count <= limit) return ok_status();
  return Error{ErrorCode::kOutOfRange, what + ": " + std::to_string(count) + " " + things +
                                           ", more than the limit of " + std::to_string(limit) +
                                           " (" + flag + ")"};
}

}  // namespace

Expected<graph::Graph> import_onnx_bytes(const std::string& bytes, const std::string& what,
                                         const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty()) return invalid_argument(what + " is empty");
  TT_RETURN_IF_ERROR(check_count(what, static_cast<int64_t>(bytes.size()), "bytes",
                                 options.limits.max_model_bytes, "--max-model-bytes"));
  if (!model.ParseFromString(bytes))
    return invalid_argument(what +
                            " is not an ONNX model (protobuf parsing failed; truncated "
                            "or another format?)");
  TT_RETURN_IF_ERROR(check_count(what, model.graph().node_size(), "nodes", options.limits.max_nodes,
                                 "--max-onnx-nodes"));
  TT_RETURN_IF_ERROR(check_count(what, model.graph().initializer_size(), "initializers",
                                 options.limits.max_initializers, "--max-initializers"));
  return import_model(model, what, options);
}

Expected<std::vector<OnnxInputInfo>> onnx_model_inputs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open model file " + path);
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) return invalid_argument(path + " is not an ONNX model");
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<OnnxInputInfo> names;
  for (const auto& info : model.graph().input()) {
    if (initializers.count(info.name())) continue;
    if (!info.type().has_tensor_type())
      return unimplemented(path + ": input '" + info.name() +
                           "' is not a tensor (sequences, maps and optionals are not supported)");
    names.push_back({info.name(), dtype_from_onnx(info.type().tensor_type().elem_type())});
  }
  return names;
}

Expected<graph::Graph> import_onnx_file(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open model file " + path);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec)  // refused before it is read into memory
    TT_RETURN_IF_ERROR(check_count(path, static_cast<int64_t>(size), "bytes",
                                   options.limits.max_model_bytes, "--max-model-bytes"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return import_onnx_bytes(bytes.str(), path, options);
}

}  // namespace tensortune::frontend
