// Graph -> ONNX (opset 17). Other runtimes must run the very model our interpreter runs, so
// every operator maps one to one (dense becomes Gemm with transB=1, bias_add an Add with the
// bias shaped to broadcast along its axis); the element-wise, comparison, reduction, indexing
// and shape operators of imported models map in onnx_export_ops.inc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "compiler/frontend/onnx_export_ops.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/frontend/onnx_proto.h"
#include "compiler/graph/op_attrs.h"

namespace tensortune::frontend {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;

constexpr int64_t kOpset = 17;

void set_type(const graph::TensorType& type, onnx::ValueInfoProto* info) {
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(type.dtype));
  for (int64_t d : type.shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

class Exporter {
 public:
  explicit Exporter(const Graph& g) : g_(g) {}

  Expected<onnx::ModelProto> run() {
    // ONNX names values uniquely; ours are node labels, which may repeat (an imported model's
    // unnamed nodes are labelled by their operator): later ones get their value id appended.
    std::set<std::string> used;
    for (size_t i = 0; i < g_.values().size(); ++i) {
      std::string name = g_.values()[i].name;
      if (!used.insert(name).second) {
        name += "_" + std::to_string(i);
        used.insert(name);
      }
      names_.push_back(name);
    }
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("tensortune");
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(kOpset);
    gp_ = model.mutable_graph();
    gp_->set_name(g_.name());
    for (auto id : g_.inputs()) {
      auto* info = gp_->add_input();
      info->set_name(names_[id]);
      set_type(g_.type(id), info);
    }
    for (size_t i = 0; i < g_.values().size(); ++i)
      if (g_.values()[i].constant)
        tensor_to_proto(*g_.values()[i].constant, names_[i], gp_->add_initializer());
    for (const Node& n : g_.nodes()) TT_RETURN_IF_ERROR(node(n));
    for (auto id : g_.outputs()) {
      auto* info = gp_->add_output();
      info->set_name(names_[id]);
      set_type(g_.type(id), info);
    }
    return model;
  }

 private:
  onnx::NodeProto* emit(const Node& n, const std::string& op_type) {
    auto* p = gp_->add_node();
    p->set_name(n.name);
    p->set_op_type(op_type);
    for (auto in : n.inputs) p->add_input(names_[in]);
    p->add_output(names_[n.output]);
    return p;
  }

  /// An operator of the imported models' families (onnx_export_ops.cc); false when it has no
  /// mapping.
  Expected<bool> newer_node(const Node& n) {
    ExportSink sink{[&](const Node& node, const std::string& op) { return emit(node, op); },
                    [&](const std::string& name, graph::Tensor t) {
                      return extra_initializer(name, std::move(t));
                    },
                    names_};
    return export_imported_op(g_, n, sink);
  }

  std::string extra_initializer(const std::string& name, graph::Tensor t) {
    tensor_to_proto(t, name, gp_->add_initializer());
    return name;
  }

  Status node(const Node& n) {
    using graph::attrs_as;
    switch (n.op) {
      case OpKind::kConv2d: {
        const auto a = attrs_as<graph::Conv2dAttrs>(n.attrs);
        auto* p = emit(n, "Conv");
        const auto& w = g_.type(n.inputs[1]).shape;
        add_ints(p, "kernel_shape", {w[2], w[3]});
        add_ints(p, "strides", a.strides);
        add_ints(p, "pads", a.pads);
        add_ints(p, "dilations", a.dilations);
        add_int(p, "group", a.groups);
        return ok_status();
      }
      case OpKind::kBatchNorm:
        add_float(emit(n, "BatchNormalization"), "epsilon",
                  attrs_as<graph::BatchNormAttrs>(n.attrs).epsilon);
        return ok_status();
      case OpKind::kRelu:
        emit(n, "Relu");
        return ok_status();
      case OpKind::kSigmoid:
        emit(n, "Sigmoid");
        return ok_status();
      case OpKind::kHardSwish:
        emit(n, "HardSwish");
        return ok_status();
      case OpKind::kIdentity:
        emit(n, "Identity");
        return ok_status();
      case OpKind::kHardSigmoid: {
        const auto a = attrs_as<graph::HardSigmoidAttrs>(n.attrs);
        auto* p = emit(n, "HardSigmoid");
        add_float(p, "alpha", a.alpha);
        add_float(p, "beta", a.beta);
        return ok_status();
      }
      case OpKind::kClip: {
        const auto a = attrs_as<graph::ClipAttrs>(n.attrs);
        auto* p = emit(n, "Clip");
        p->add_input(extra_initializer(names_[n.output] + ".min",
                                       graph::Tensor::from_floats({}, {float(a.min)})));
        p->add_input(extra_initializer(names_[n.output] + ".max",
                                       graph::Tensor::from_floats({}, {float(a.max)})));
        return ok_status();
      }
      case OpKind::kAdd:
        emit(n, "Add");
        return ok_status();
      case OpKind::kSubtract:
        emit(n, "Sub");
        return ok_status();
      case OpKind::kMultiply:
        emit(n, "Mul");
        return ok_status();
      case OpKind::kDivide:
        emit(n, "Div");
        return ok_status();
      case OpKind::kMatMul:
        emit(n, "MatMul");
        return ok_status();
      case OpKind::kDense:
        add_int(emit(n, "Gemm"), "transB", 1);
        return ok_status();
      case OpKind::kBiasAdd: {
        // Add broadcasts from the right: give the bias trailing ones after its axis.
        const auto& x = g_.type(n.output).shape;
        const int64_t given = attrs_as<graph::BiasAddAttrs>(n.attrs).axis;
        const int64_t axis = given < 0 ? given + static_cast<int64_t>(x.size()) : given;
        auto* p = emit(n, "Add");
        graph::Shape s{x[axis]};
        for (size_t i = axis + 1; i < x.size(); ++i) s.push_back(1);
        p->add_input(extra_initializer(names_[n.output] + ".shape",
                                       graph::Tensor::from_ints({int64_t(s.size())}, s)));
        // Reshape the bias first; rewire: Add(x, Reshape(bias, s)).
        auto* r = gp_->add_node();
        r->set_name(names_[n.output] + ".reshape");
        r->set_op_type("Reshape");
        r->add_input(p->input(1));
        r->add_input(p->input(2));
        r->add_output(names_[n.output] + ".bias");
        p->mutable_input()->RemoveLast();
        p->set_input(1, names_[n.output] + ".bias");
        // Nodes must be topologically sorted: put the Reshape before the Add.
        const int last = gp_->node_size() - 1;
        gp_->mutable_node()->SwapElements(last, last - 1);
        return ok_status();
      }
      case OpKind::kMaxPool2d:
      case OpKind::kAvgPool2d: {
        const auto a = attrs_as<graph::Pool2dAttrs>(n.attrs);
        if (a.block) break;
        auto* p = emit(n, n.op == OpKind::kMaxPool2d ? "MaxPool" : "AveragePool");
        add_ints(p, "kernel_shape", a.kernel);
        add_ints(p, "strides", a.strides);
        add_ints(p, "pads", a.pads);
        if (n.op == OpKind::kMaxPool2d) add_ints(p, "dilations", a.dilations);
        add_int(p, "ceil_mode", a.ceil_mode);
        if (n.op == OpKind::kAvgPool2d) add_int(p, "count_include_pad", a.count_include_pad);
        return ok_status();
      }
      case OpKind::kGlobalAvgPool2d:
        if (attrs_as<graph::GlobalPool2dAttrs>(n.attrs).block) break;
        emit(n, "GlobalAveragePool");
        return ok_status();
      case OpKind::kFlatten:
        add_int(emit(n, "Flatten"), "axis", attrs_as<graph::FlattenAttrs>(n.attrs).axis);
        return ok_status();
      case OpKind::kSoftmax:
        add_int(emit(n, "Softmax"), "axis", attrs_as<graph::SoftmaxAttrs>(n.attrs).axis);
        return ok_status();
      case OpKind::kConcat:
        add_int(emit(n, "Concat"), "axis", attrs_as<graph::ConcatAttrs>(n.attrs).axis);
        return ok_status();
      case OpKind::kTranspose:
        add_ints(emit(n, "Transpose"), "perm", attrs_as<graph::TransposeAttrs>(n.attrs).perm);
        return ok_status();
      case OpKind::kReshape: {
        auto* p = emit(n, "Reshape");
        const auto s = attrs_as<graph::ReshapeAttrs>(n.attrs).shape;
        // Our shape is resolved: a 0 is an empty axis, which ONNX reads as such only with
        // allowzero (opset 14 on); otherwise 0 would copy the input's dimension.
        if (std::find(s.begin(), s.end(), 0) != s.end()) add_int(p, "allowzero", 1);
        p->add_input(extra_initializer(names_[n.output] + ".shape",
                                       graph::Tensor::from_ints({int64_t(s.size())}, s)));
        return ok_status();
      }
      default: {
        TT_ASSIGN_OR_RETURN(bool done, newer_node(n));
        if (done) return ok_status();
        break;
      }
    }
    return unimplemented(std::string("cannot export operator ") + graph::op_name(n.op) +
                         " (node '" + n.name + "') to ONNX; export the graph before AlterOpLayout");
  }

  const Graph& g_;
  onnx::GraphProto* gp_ = nullptr;
  std::vector<std::string> names_;  ///< by value id: unique ONNX names
};

}  // namespace

Status export_onnx(const Graph& graph, const std::string& path) {
  TT_ASSIGN_OR_RETURN(onnx::ModelProto model, Exporter(graph).run());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return invalid_argument("cannot write ONNX file " + path);
  if (!model.SerializeToOstream(&out) || !out.flush())
    return data_loss("writing ONNX file " + path + " failed");
  return ok_status();
}

}  // namespace tensortune::frontend
