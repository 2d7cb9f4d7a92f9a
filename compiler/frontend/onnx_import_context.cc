#include "compiler/frontend/onnx_import_context.h"

#include "compiler/graph/interpreter.h"

namespace tensortune::frontend {

using graph::ValueId;

std::string node_label(const onnx::NodeProto& node) {
  return node.name().empty() ? node.op_type() : node.name();
}

std::optional<ValueId> ImportContext::find(const std::string& onnx_name) const {
  auto it = names_.find(onnx_name);
  if (it == names_.end()) return std::nullopt;
  return it->second;
}

graph::DType ImportContext::storage_dtype(const std::string& onnx_name, graph::ValueId id) const {
  auto it = storage_dtypes_.find(onnx_name);
  return it != storage_dtypes_.end() ? it->second : graph_.type(id).dtype;
}

graph::Tensor in_compute_dtype(graph::Tensor tensor) {
  tensor.dtype = graph::compute_dtype(tensor.dtype);
  return tensor;
}

Status emit_cast(ImportContext& c, const onnx::NodeProto& n, ValueId x, graph::DType to) {
  const graph::DType compute = graph::compute_dtype(to);
  ValueId y = x;
  if (to != compute && to != graph::DType::kFloat64) {  // round onto the narrow grid first
    TT_ASSIGN_OR_RETURN(
        y, c.emit(graph::OpKind::kCast, node_label(n) + ".to_" + graph::dtype_name(to), {y},
                  graph::Attrs{{"to", static_cast<int64_t>(to)}}));
  }
  TT_ASSIGN_OR_RETURN(y, c.emit(graph::OpKind::kCast, node_label(n), {y},
                                graph::Attrs{{"to", static_cast<int64_t>(compute)}}));
  if (n.output_size() > 0) c.note_storage_dtype(n.output(0), to);
  return bind(c, n, y);
}

Expected<std::optional<graph::Tensor>> ImportContext::try_evaluate(ValueId id) {
  if (const graph::Tensor* t = graph_.constant(id)) return std::optional<graph::Tensor>(*t);
  if (auto it = evaluated_.find(id); it != evaluated_.end()) return it->second;
  const int producer = graph_.value(id).producer;
  std::optional<graph::Tensor> result;
  if (producer >= 0) {
    const graph::Node& node = graph_.nodes()[producer];
    std::vector<graph::Tensor> held;
    held.reserve(node.inputs.size());
    bool all = true;
    for (ValueId in : node.inputs) {
      TT_ASSIGN_OR_RETURN(auto v, try_evaluate(in));
      if (!v) {
        all = false;
        break;
      }
      held.push_back(std::move(*v));
    }
    if (all) {
      std::vector<const graph::Tensor*> inputs;
      for (const auto& t : held) inputs.push_back(&t);
      TT_ASSIGN_OR_RETURN(graph::Tensor t, graph::evaluate_node(node, inputs, graph_.type(id)));
      result = std::move(t);
    }
  }
  evaluated_[id] = result;
  return result;
}

bool ImportContext::has_input(const onnx::NodeProto& node, int i) const {
  return i < node.input_size() && !node.input(i).empty();
}

Expected<ValueId> ImportContext::input(const onnx::NodeProto& node, int i) const {
  if (!has_input(node, i))
    return invalid_argument("node '" + node_label(node) + "' (" + node.op_type() +
                            ") is missing input " + std::to_string(i));
  auto id = find(node.input(i));
  if (!id)
    return invalid_argument("node '" + node_label(node) + "' reads '" + node.input(i) +
                            "', which no earlier node, input or initializer defines");
  return *id;
}

Expected<const graph::Tensor*> ImportContext::constant_input(const onnx::NodeProto& node, int i,
                                                             const char* what) const {
  TT_ASSIGN_OR_RETURN(ValueId id, input(node, i));
  if (!graph_.is_constant(id))
    return unimplemented("node '" + node_label(node) + "' (" + node.op_type() + "): input " + what +
                         " ('" + node.input(i) +
                         "') must be a constant once input shapes are fixed");
  return graph_.constant(id);
}

Expected<std::vector<int64_t>> ImportContext::int_list_input(const onnx::NodeProto& node, int i,
                                                             const char* what) const {
  TT_ASSIGN_OR_RETURN(const graph::Tensor* t, constant_input(node, i, what));
  if (graph::is_float(t->dtype))
    return invalid_argument("node '" + node_label(node) + "': input " + what +
                            " must be an integer tensor, got " + graph::dtype_name(t->dtype));
  return t->i64;
}

Expected<ValueId> ImportContext::emit(graph::OpKind op, const std::string& name,
                                      std::vector<ValueId> inputs, graph::Attrs attrs) {
  std::vector<graph::TensorType> types;
  bool all_constant = true;
  for (ValueId in : inputs) {
    types.push_back(graph_.type(in));
    all_constant = all_constant && graph_.is_constant(in);
  }
  auto type = graph::infer_type(op, types, attrs);
  const bool shape_arithmetic =
      type && (op == graph::OpKind::kShape || (all_constant && !graph::is_float(type->dtype)));
  if (!shape_arithmetic) return graph_.add_node(op, name, std::move(inputs), std::move(attrs));
  graph::Node node;
  node.op = op;
  node.name = name;
  node.attrs = std::move(attrs);
  auto folded = graph::evaluate_on_constants(graph_, node, inputs, *type);
  if (!folded) return folded.error().with_context("node '" + name + "'");
  return graph_.add_constant(name, std::move(folded).value());
}

NodeAttributes::NodeAttributes(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) map_[a.name()] = &a;
}

const onnx::AttributeProto* NodeAttributes::get(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : it->second;
}

int64_t NodeAttributes::get_int(const std::string& name, int64_t fallback) const {
  const auto* a = get(name);
  return a ? a->i() : fallback;
}

float NodeAttributes::get_float(const std::string& name, float fallback) const {
  const auto* a = get(name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> NodeAttributes::get_ints(const std::string& name,
                                              std::vector<int64_t> fallback) const {
  const auto* a = get(name);
  if (!a) return fallback;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::string NodeAttributes::get_string(const std::string& name, std::string fallback) const {
  const auto* a = get(name);
  return a ? a->s() : fallback;
}

Error unsupported(const onnx::NodeProto& n, const std::string& what) {
  return unimplemented("node '" + node_label(n) + "' (" + n.op_type() + "): " + what);
}

Status bind(ImportContext& c, const onnx::NodeProto& n, graph::ValueId id) {
  for (int i = 1; i < n.output_size(); ++i)
    if (!n.output(i).empty())
      return unsupported(
          n, "output " + std::to_string(i) + " ('" + n.output(i) + "') is not supported");
  if (n.output_size() < 1) return invalid_argument("node '" + node_label(n) + "' has no output");
  c.bind(n.output(0), id);
  return ok_status();
}

Status emit_unary(ImportContext& c, const onnx::NodeProto& n, graph::OpKind op,
                  graph::Attrs attrs) {
  TT_ASSIGN_OR_RETURN(graph::ValueId x, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(graph::ValueId y, c.emit(op, node_label(n), {x}, std::move(attrs)));
  return bind(c, n, y);
}

Status emit_binary(ImportContext& c, const onnx::NodeProto& n, graph::OpKind op) {
  TT_ASSIGN_OR_RETURN(graph::ValueId a, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(graph::ValueId b, c.input(n, 1));
  TT_ASSIGN_OR_RETURN(graph::ValueId y, c.emit(op, node_label(n), {a, b}));
  return bind(c, n, y);
}

Expected<std::vector<int64_t>> list_operand(ImportContext& c, const onnx::NodeProto& n,
                                            int64_t since, const char* name, int i,
                                            std::vector<int64_t> fallback) {
  if (c.opset() < since) return NodeAttributes(n).get_ints(name, std::move(fallback));
  if (!c.has_input(n, i)) return fallback;
  return c.int_list_input(n, i, name);
}

}  // namespace tensortune::frontend
