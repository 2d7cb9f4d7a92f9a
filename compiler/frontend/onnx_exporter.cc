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

void add_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t x : v) a->add_ints(x);
}
void add_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(v);
}
void add_float(onnx::NodeProto* n, const std::string& name, double v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(static_cast<float>(v));
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

  /// An operator of the newer families (onnx_export_ops.cc); false when it has no mapping.
  Expected<bool> newer_node(const Node& n);
  /// An int64 initializer named after the node, appended as the node's next input.
  void add_ints_input(onnx::NodeProto* p, const Node& n, const std::string& what,
                      const std::vector<int64_t>& v) {
    p->add_input(extra_initializer(names_[n.output] + "." + what,
                                   graph::Tensor::from_ints({int64_t(v.size())}, v)));
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

// The operators of imported models beyond the zoo's, in their opset 17 forms: inputs where
// opset 17 takes lists as inputs (Slice, Squeeze, Unsqueeze, ReduceSum, Expand, Tile, Pad,
// TopK's K), attributes elsewhere (the other reductions' axes until opset 18).
Expected<bool> Exporter::newer_node(const Node& n) {
  using graph::attrs_as;
  static const std::map<OpKind, const char*> kPlain = {
      {OpKind::kExp, "Exp"},
      {OpKind::kLog, "Log"},
      {OpKind::kSqrt, "Sqrt"},
      {OpKind::kErf, "Erf"},
      {OpKind::kTanh, "Tanh"},
      {OpKind::kNeg, "Neg"},
      {OpKind::kAbs, "Abs"},
      {OpKind::kFloor, "Floor"},
      {OpKind::kCeil, "Ceil"},
      {OpKind::kRound, "Round"},
      {OpKind::kReciprocal, "Reciprocal"},
      {OpKind::kSoftplus, "Softplus"},
      {OpKind::kNot, "Not"},
      {OpKind::kPow, "Pow"},
      {OpKind::kMaximum, "Max"},
      {OpKind::kMinimum, "Min"},
      {OpKind::kPRelu, "PRelu"},
      {OpKind::kEqual, "Equal"},
      {OpKind::kLess, "Less"},
      {OpKind::kLessOrEqual, "LessOrEqual"},
      {OpKind::kGreater, "Greater"},
      {OpKind::kGreaterOrEqual, "GreaterOrEqual"},
      {OpKind::kAnd, "And"},
      {OpKind::kOr, "Or"},
      {OpKind::kXor, "Xor"},
      {OpKind::kWhere, "Where"},
  };
  static const std::map<OpKind, const char*> kReductions = {
      {OpKind::kReduceMean, "ReduceMean"},     {OpKind::kReduceSum, "ReduceSum"},
      {OpKind::kReduceMax, "ReduceMax"},       {OpKind::kReduceMin, "ReduceMin"},
      {OpKind::kReduceProd, "ReduceProd"},     {OpKind::kReduceL2, "ReduceL2"},
      {OpKind::kReduceL1, "ReduceL1"},         {OpKind::kReduceSumSquare, "ReduceSumSquare"},
      {OpKind::kReduceLogSum, "ReduceLogSum"}, {OpKind::kReduceLogSumExp, "ReduceLogSumExp"},
  };
  if (auto it = kPlain.find(n.op); it != kPlain.end()) {
    emit(n, it->second);
    return true;
  }
  if (auto it = kReductions.find(n.op); it != kReductions.end()) {
    const auto a = attrs_as<graph::ReduceAttrs>(n.attrs);
    auto* p = emit(n, it->second);
    if (n.op == OpKind::kReduceSum)
      add_ints_input(p, n, "axes", a.axes);
    else
      add_ints(p, "axes", a.axes);
    add_int(p, "keepdims", a.keepdims);
    return true;
  }
  switch (n.op) {
    case OpKind::kLeakyRelu:
      add_float(emit(n, "LeakyRelu"), "alpha", attrs_as<graph::LeakyReluAttrs>(n.attrs).alpha);
      return true;
    case OpKind::kElu:
      add_float(emit(n, "Elu"), "alpha", attrs_as<graph::EluAttrs>(n.attrs).alpha);
      return true;
    case OpKind::kSelu: {
      const auto a = attrs_as<graph::SeluAttrs>(n.attrs);
      auto* p = emit(n, "Selu");
      add_float(p, "alpha", a.alpha);
      add_float(p, "gamma", a.gamma);
      return true;
    }
    case OpKind::kCast:
      add_int(emit(n, "Cast"), "to",
              dtype_to_onnx(static_cast<graph::DType>(attrs_as<graph::CastAttrs>(n.attrs).to)));
      return true;
    case OpKind::kGather:
      add_int(emit(n, "Gather"), "axis", attrs_as<graph::GatherAttrs>(n.attrs).axis);
      return true;
    case OpKind::kGatherElements:
      add_int(emit(n, "GatherElements"), "axis", attrs_as<graph::GatherAttrs>(n.attrs).axis);
      return true;
    case OpKind::kGatherND:
      add_int(emit(n, "GatherND"), "batch_dims",
              attrs_as<graph::GatherNDAttrs>(n.attrs).batch_dims);
      return true;
    case OpKind::kScatterND: {
      const int64_t r = attrs_as<graph::ScatterNDAttrs>(n.attrs).reduction;
      auto* p = emit(n, "ScatterND");
      auto* a = p->add_attribute();
      a->set_name("reduction");
      a->set_type(onnx::AttributeProto_AttributeType_STRING);
      a->set_s(r == 1 ? "add" : r == 2 ? "mul" : "none");
      return true;
    }
    case OpKind::kResize: {
      // Resize(X, roi, scales): our resolved per-axis scales (their float bits), from which an
      // importer derives the same sizes (floor(in * scale)) and the same coordinates.
      const auto a = attrs_as<graph::ResizeAttrs>(n.attrs);
      const char* const modes[] = {"nearest", "linear", "cubic"};
      const char* const coords[] = {"half_pixel",           "asymmetric",
                                    "align_corners",        "pytorch_half_pixel",
                                    "tf_half_pixel_for_nn", "tf_crop_and_resize"};
      const char* const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
      if (a.mode < 0 || a.mode > 2 || a.coord < 0 || a.coord > 5 || a.nearest < 0 || a.nearest > 3)
        return false;
      auto floats = [](const graph::Ints& bits) {
        std::vector<float> v;
        for (int64_t b : bits) {
          const auto u = static_cast<uint32_t>(b);
          float f;
          std::memcpy(&f, &u, 4);
          v.push_back(f);
        }
        return v;
      };
      auto* p = emit(n, "Resize");
      const auto roi = floats(a.roi_bits), scales = floats(a.scale_bits);
      p->add_input(extra_initializer(names_[n.output] + ".roi",
                                     graph::Tensor::from_floats({int64_t(roi.size())}, roi)));
      p->add_input(extra_initializer(names_[n.output] + ".scales",
                                     graph::Tensor::from_floats({int64_t(scales.size())}, scales)));
      auto add_string = [&](const char* name, const char* value) {
        auto* attr = p->add_attribute();
        attr->set_name(name);
        attr->set_type(onnx::AttributeProto_AttributeType_STRING);
        attr->set_s(value);
      };
      add_string("mode", modes[a.mode]);
      add_string("coordinate_transformation_mode", coords[a.coord]);
      add_string("nearest_mode", nearests[a.nearest]);
      add_float(p, "cubic_coeff_a", a.cubic_coeff_a);
      add_int(p, "exclude_outside", a.exclude_outside);
      add_float(p, "extrapolation_value", a.extrapolation_value);
      return true;
    }
    case OpKind::kLayerNorm: {
      const auto a = attrs_as<graph::LayerNormAttrs>(n.attrs);
      auto* p = emit(n, "LayerNormalization");
      add_int(p, "axis", a.axis);
      add_float(p, "epsilon", a.epsilon);
      return true;
    }
    case OpKind::kArgMax:
    case OpKind::kArgMin: {
      const auto a = attrs_as<graph::ArgReduceAttrs>(n.attrs);
      auto* p = emit(n, n.op == OpKind::kArgMax ? "ArgMax" : "ArgMin");
      add_int(p, "axis", a.axis);
      add_int(p, "keepdims", a.keepdims);
      add_int(p, "select_last_index", a.select_last_index);
      return true;
    }
    case OpKind::kSlice: {
      const auto [starts, ends, axes, steps] = attrs_as<graph::SliceAttrs>(n.attrs);
      auto* p = emit(n, "Slice");
      add_ints_input(p, n, "starts", starts);
      add_ints_input(p, n, "ends", ends);
      add_ints_input(p, n, "axes", axes);
      add_ints_input(p, n, "steps", steps);
      return true;
    }
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      add_ints_input(emit(n, n.op == OpKind::kSqueeze ? "Squeeze" : "Unsqueeze"), n, "axes",
                     attrs_as<graph::AxesAttrs>(n.attrs).axes);
      return true;
    case OpKind::kExpand:
      add_ints_input(emit(n, "Expand"), n, "shape", g_.type(n.output).shape);
      return true;
    case OpKind::kTile:
      add_ints_input(emit(n, "Tile"), n, "repeats", attrs_as<graph::TileAttrs>(n.attrs).repeats);
      return true;
    case OpKind::kPad: {
      const auto a = attrs_as<graph::PadAttrs>(n.attrs);
      const char* const modes[] = {"constant", "reflect", "edge"};
      if (a.mode < 0 || a.mode > 2) return false;
      auto* p = emit(n, "Pad");
      add_ints_input(p, n, "pads", a.pads);
      auto* mode = p->add_attribute();
      mode->set_name("mode");
      mode->set_type(onnx::AttributeProto_AttributeType_STRING);
      mode->set_s(modes[a.mode]);
      if (a.mode == 0) {
        graph::Tensor value = graph::Tensor::zeros(g_.type(n.inputs[0]).dtype, {});
        if (graph::is_float(value.dtype))
          value.f32[0] = static_cast<float>(a.value);
        else
          value.i64[0] = static_cast<int64_t>(a.value);
        p->add_input(extra_initializer(names_[n.output] + ".value", value));
      }
      return true;
    }
    case OpKind::kLogSoftmax:
      add_int(emit(n, "LogSoftmax"), "axis", attrs_as<graph::SoftmaxAttrs>(n.attrs).axis);
      return true;
    case OpKind::kInstanceNorm:
      add_float(emit(n, "InstanceNormalization"), "epsilon",
                attrs_as<graph::BatchNormAttrs>(n.attrs).epsilon);
      return true;
    case OpKind::kConv2dTranspose: {
      const auto a = attrs_as<graph::Conv2dTransposeAttrs>(n.attrs);
      auto* p = emit(n, "ConvTranspose");
      const auto& w = g_.type(n.inputs[1]).shape;
      add_ints(p, "kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
      add_ints(p, "strides", a.strides);
      add_ints(p, "pads", a.pads);
      add_ints(p, "dilations", a.dilations);
      add_ints(p, "output_padding", a.output_padding);
      add_int(p, "group", a.groups);
      return true;
    }
    case OpKind::kTopKIndices: {
      // TopK's Indices output; its Values output goes unused.
      const auto a = attrs_as<graph::TopKAttrs>(n.attrs);
      auto* p = emit(n, "TopK");
      p->clear_output();
      p->add_output(names_[n.output] + ".values");
      p->add_output(names_[n.output]);
      add_ints_input(p, n, "k", {a.k});
      add_int(p, "axis", a.axis);
      add_int(p, "largest", a.largest);
      return true;
    }
    default:
      return false;
  }
}

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
