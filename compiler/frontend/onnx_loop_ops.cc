// ONNX's Loop, unrolled at import: the IR has no control flow, but a loop whose trip count and
// condition are known once the input shapes are fixed (they depend on constants only: Range's
// function body, fixed-count loops from exporters) becomes its body's nodes, once per
// iteration. Loop-carried values thread from one copy to the next; scan outputs are stacked
// along a new first axis. A loop whose count or condition depends on the data is refused,
// naming the node, and so is one of more than kMaxUnrolledIterations iterations or one that
// grows the graph past kMaxUnrolledNodes.
#include "compiler/frontend/onnx_import_context.h"
#include "compiler/graph/op_attrs.h"

namespace tensortune::frontend {
namespace {

using graph::Attrs;
using graph::OpKind;
using graph::ValueId;

constexpr int64_t kMaxUnrolledIterations = 10000;
// Nested loops multiply: the graph they unroll into is bounded as a whole.
constexpr size_t kMaxUnrolledNodes = 1000000;

// A scalar's value, from a tensor the loop's inputs evaluated to.
// (float_to_integer: a float count from a crafted model saturates instead of overflowing).
int64_t scalar_of(const graph::Tensor& t) {
  if (t.size() != 1) return -1;
  return graph::is_float(t.dtype) ? graph::float_to_integer(graph::DType::kInt64, t.f32[0])
                                  : t.i64[0];
}

Status loop(ImportContext& c, const onnx::NodeProto& n) {
  const auto* body_attr = NodeAttributes(n).get("body");
  if (!body_attr || !body_attr->has_g()) return unsupported(n, "Loop without a body graph");
  const onnx::GraphProto& body = body_attr->g();
  const int carried = std::max(0, n.input_size() - 2);
  const int scans = body.output_size() - 1 - carried;
  if (body.input_size() != 2 + carried || scans < 0)
    return invalid_argument("node '" + node_label(n) + "' (Loop): the body has " +
                            std::to_string(body.input_size()) + " inputs and " +
                            std::to_string(body.output_size()) + " outputs for " +
                            std::to_string(carried) + " loop-carried values");
  const std::string name = node_label(n);
  // The trip count and the first condition, when given, must be known now.
  auto known = [&](int i, const char* what) -> Expected<std::optional<int64_t>> {
    if (!c.has_input(n, i)) return std::optional<int64_t>();
    TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, i));
    TT_ASSIGN_OR_RETURN(auto t, c.try_evaluate(v));
    if (!t || t->size() != 1)
      return unsupported(n, std::string("a Loop whose ") + what +
                                " depends on the model's inputs (only loops that can be unrolled "
                                "at import are supported)");
    return std::optional<int64_t>(scalar_of(*t));
  };
  TT_ASSIGN_OR_RETURN(auto trip_count, known(0, "trip count"));
  TT_ASSIGN_OR_RETURN(auto first_cond, known(1, "condition"));
  if (!trip_count && !c.has_input(n, 1)) return unsupported(n, "a Loop with no bound");
  std::vector<ValueId> values;
  for (int j = 0; j < carried; ++j) {
    TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, 2 + j));
    values.push_back(v);
  }
  std::vector<std::vector<ValueId>> stacked(scans);
  const auto& converters = onnx_converters();
  bool cond = first_cond.value_or(1) != 0;
  int64_t it = 0;
  for (; cond && (!trip_count || it < *trip_count); ++it) {
    if (it >= kMaxUnrolledIterations)
      return unsupported(n, "a Loop of more than " + std::to_string(kMaxUnrolledIterations) +
                                " iterations (it is unrolled at import)");
    if (c.graph().nodes().size() > kMaxUnrolledNodes)
      return unsupported(
          n, "a Loop that unrolls into more than " + std::to_string(kMaxUnrolledNodes) + " nodes");
    const std::string at = name + ".iter" + std::to_string(it);
    c.bind(body.input(0).name(),
           c.graph().add_constant(at + ".i", graph::Tensor::from_ints({}, {it})));
    c.bind(body.input(1).name(),
           c.graph().add_constant(at + ".cond",
                                  graph::Tensor::from_ints({}, {1}, graph::DType::kBool)));
    for (int j = 0; j < carried; ++j) c.bind(body.input(2 + j).name(), values[j]);
    for (const auto& node : body.node()) {
      auto conv = converters.find(node.op_type());
      if (conv == converters.end())
        return unsupported(n, "its body uses the unsupported operator '" + node.op_type() +
                                  "' (node '" + node_label(node) + "')");
      if (node.output_size() < 1)
        return invalid_argument("node '" + node_label(node) + "' (" + node.op_type() +
                                ") in the body of node '" + name + "' has no output");
      if (Status s = conv->second(c, node); !s)
        return s.error().with_context("node '" + name + "' (Loop), iteration " +
                                      std::to_string(it));
    }
    auto output = [&](int k) -> Expected<ValueId> {
      auto id = c.find(body.output(k).name());
      if (!id)
        return invalid_argument("node '" + name + "' (Loop): body output '" +
                                body.output(k).name() + "' is never produced");
      return *id;
    };
    TT_ASSIGN_OR_RETURN(ValueId cond_out, output(0));
    TT_ASSIGN_OR_RETURN(auto cond_value, c.try_evaluate(cond_out));
    if (!cond_value || cond_value->size() != 1)
      return unsupported(n, "a Loop whose condition depends on the model's inputs");
    cond = scalar_of(*cond_value) != 0;
    for (int j = 0; j < carried; ++j) {
      TT_ASSIGN_OR_RETURN(values[j], output(1 + j));
    }
    for (int k = 0; k < scans; ++k) {
      TT_ASSIGN_OR_RETURN(ValueId v, output(1 + carried + k));
      TT_ASSIGN_OR_RETURN(v, c.emit(OpKind::kUnsqueeze, at + ".scan" + std::to_string(k), {v},
                                    Attrs{{"axes", std::vector<int64_t>{0}}}));
      stacked[k].push_back(v);
    }
  }
  for (int j = 0; j < carried && j < n.output_size(); ++j)
    if (!n.output(j).empty()) c.bind(n.output(j), values[j]);
  for (int k = 0; k < scans && carried + k < n.output_size(); ++k) {
    if (n.output(carried + k).empty()) continue;
    if (stacked[k].empty()) return unsupported(n, "scan outputs of a Loop that runs no iteration");
    ValueId v = stacked[k][0];
    if (stacked[k].size() > 1) {
      TT_ASSIGN_OR_RETURN(v, c.emit(OpKind::kConcat, name + ".scan" + std::to_string(k), stacked[k],
                                    Attrs{{"axis", int64_t{0}}}));
    }
    c.bind(n.output(carried + k), v);
  }
  return ok_status();
}

}  // namespace

void add_loop_converters(std::map<std::string, Converter>& t) { t["Loop"] = loop; }

}  // namespace tensortune::frontend
