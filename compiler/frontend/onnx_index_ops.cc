// Converters for the indexing operators: GatherElements, GatherND, ScatterND and TopK. TopK
// becomes the indices of its k values (top_k_indices) and a gather_elements of those.
#include "compiler/frontend/onnx_import_context.h"
#include "compiler/graph/op_attrs.h"

namespace tensortune::frontend {
namespace {

using graph::Attrs;
using graph::OpKind;
using graph::ValueId;

Status gather_elements(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId i, c.input(n, 1));
  TT_ASSIGN_OR_RETURN(ValueId y, c.emit(OpKind::kGatherElements, node_label(n), {x, i},
                                        Attrs{{"axis", NodeAttributes(n).get_int("axis", 0)}}));
  return bind(c, n, y);
}

Status gather_nd(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  TT_ASSIGN_OR_RETURN(ValueId i, c.input(n, 1));
  graph::GatherNDAttrs attrs;
  attrs.batch_dims = NodeAttributes(n).get_int("batch_dims", 0);
  TT_ASSIGN_OR_RETURN(ValueId y,
                      c.emit(OpKind::kGatherND, node_label(n), {x, i}, graph::to_attrs(attrs)));
  return bind(c, n, y);
}

Status scatter_nd(ImportContext& c, const onnx::NodeProto& n) {
  std::vector<ValueId> in;
  for (int i = 0; i < 3; ++i) {
    TT_ASSIGN_OR_RETURN(ValueId v, c.input(n, i));
    in.push_back(v);
  }
  const std::string reduction = NodeAttributes(n).get_string("reduction", "none");
  graph::ScatterNDAttrs attrs;
  if (reduction == "add")
    attrs.reduction = 1;
  else if (reduction == "mul")
    attrs.reduction = 2;
  else if (reduction != "none")
    return unsupported(n, "attribute reduction='" + reduction + "' (supported: none, add, mul)");
  TT_ASSIGN_OR_RETURN(ValueId y,
                      c.emit(OpKind::kScatterND, node_label(n), in, graph::to_attrs(attrs)));
  return bind(c, n, y);
}

// TopK: k from the attribute before opset 10, from input 1 (a constant) since. Outputs Values
// and Indices, either may be left out.
Status top_k(ImportContext& c, const onnx::NodeProto& n) {
  TT_ASSIGN_OR_RETURN(ValueId x, c.input(n, 0));
  NodeAttributes a(n);
  graph::TopKAttrs attrs;
  if (c.opset() < 10) {
    attrs.k = a.get_int("k", 0);
  } else {
    TT_ASSIGN_OR_RETURN(auto k, c.int_list_input(n, 1, "K"));
    if (k.size() != 1)
      return invalid_argument("node '" + node_label(n) + "': K must hold one value, got " +
                              std::to_string(k.size()));
    attrs.k = k[0];
  }
  attrs.axis = a.get_int("axis", -1);
  attrs.largest = a.get_int("largest", 1);
  const std::string name = node_label(n);
  TT_ASSIGN_OR_RETURN(ValueId indices,
                      c.emit(OpKind::kTopKIndices, name + ".indices", {x}, graph::to_attrs(attrs)));
  TT_ASSIGN_OR_RETURN(ValueId values, c.emit(OpKind::kGatherElements, name, {x, indices},
                                             Attrs{{"axis", attrs.axis}}));
  if (n.output_size() > 0 && !n.output(0).empty()) c.bind(n.output(0), values);
  if (n.output_size() > 1 && !n.output(1).empty()) c.bind(n.output(1), indices);
  return ok_status();
}

}  // namespace

void add_index_converters(std::map<std::string, Converter>& t) {
  t["GatherElements"] = gather_elements;
  t["GatherND"] = gather_nd;
  t["ScatterND"] = scatter_nd;
  t["TopK"] = top_k;
}

}  // namespace tensortune::frontend
