#include "compiler/graph/interpreter.h"

#include "compiler/graph/kernels.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph {

Expected<Tensor> evaluate_node(const Node& node, const std::vector<const Tensor*>& in,
                               const TensorType& type) {
  const Attrs& a = node.attrs;
  const Shape& out = type.shape;
  auto activation = [&](kernels::ActivationOp op) { return kernels::activation(op, *in[0], a); };
  auto arithmetic = [&](kernels::ArithmeticOp op) {
    return kernels::arithmetic(op, *in[0], *in[1], out);
  };
  auto pool = [&](kernels::PoolOp op) {
    return kernels::pool2d(op, *in[0], attrs_as<Pool2dAttrs>(a), out);
  };
  auto unary_math = [&](kernels::MathOp op) { return kernels::unary_math(op, *in[0], a); };
  auto binary_math = [&](kernels::MathBinaryOp op) {
    return kernels::binary_math(op, *in[0], *in[1], type);
  };
  auto reduce = [&](kernels::ReduceOp op) {
    return kernels::reduce(op, *in[0], attrs_as<ReduceAttrs>(a), out);
  };
  auto arg_reduce = [&](kernels::ArgReduceOp op) {
    return kernels::arg_reduce(op, *in[0], attrs_as<ArgReduceAttrs>(a), out);
  };
  switch (node.op) {
    case OpKind::kConv2d:
      return kernels::conv2d(*in[0], *in[1], attrs_as<Conv2dAttrs>(a), out);
    case OpKind::kConv2dNCHWc:
      if (!is_float(in[0]->dtype))
        return kernels::conv2d_nchwc_integer(*in[0], *in[1], in.size() > 2 ? in[2] : nullptr,
                                             attrs_as<Conv2dNCHWcAttrs>(a), out);
      return kernels::conv2d_nchwc(*in[0], *in[1], attrs_as<Conv2dNCHWcAttrs>(a), out);
    case OpKind::kDense:
      if (!is_float(in[0]->dtype))
        return kernels::dense_integer(*in[0], *in[1], in.size() > 2 ? in[2] : nullptr);
      return kernels::dense(*in[0], *in[1]);
    case OpKind::kMatMul:
      return kernels::matmul(*in[0], *in[1], out);
    case OpKind::kBiasAdd:
      return kernels::bias_add(*in[0], *in[1],
                               normalize_axis(attrs_as<BiasAddAttrs>(a).axis, in[0]->shape.size()));
    case OpKind::kBatchNorm:
      return kernels::batch_norm(*in[0], *in[1], *in[2], *in[3], *in[4],
                                 attrs_as<BatchNormAttrs>(a).epsilon);
    case OpKind::kRelu:
      return activation(kernels::ActivationOp::kRelu);
    case OpKind::kClip:
      return activation(kernels::ActivationOp::kClip);
    case OpKind::kSigmoid:
      return activation(kernels::ActivationOp::kSigmoid);
    case OpKind::kHardSigmoid:
      return activation(kernels::ActivationOp::kHardSigmoid);
    case OpKind::kHardSwish:
      return activation(kernels::ActivationOp::kHardSwish);
    case OpKind::kIdentity:
      return activation(kernels::ActivationOp::kIdentity);
    case OpKind::kAdd:
      return arithmetic(kernels::ArithmeticOp::kAdd);
    case OpKind::kSubtract:
      return arithmetic(kernels::ArithmeticOp::kSubtract);
    case OpKind::kMultiply:
      return arithmetic(kernels::ArithmeticOp::kMultiply);
    case OpKind::kDivide:
      return arithmetic(kernels::ArithmeticOp::kDivide);
    case OpKind::kMaxPool2d:
      return pool(kernels::PoolOp::kMax);
    case OpKind::kAvgPool2d:
      return pool(kernels::PoolOp::kAvg);
    case OpKind::kGlobalAvgPool2d:
      return pool(kernels::PoolOp::kGlobalAvg);
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kUnsqueeze:
    case OpKind::kSqueeze:
      return kernels::reshape(*in[0], out);
    case OpKind::kTranspose:
      return kernels::transpose(*in[0], attrs_as<TransposeAttrs>(a).perm);
    case OpKind::kConcat:
      return kernels::concat(in, normalize_axis(attrs_as<ConcatAttrs>(a).axis, out.size()), out);
    case OpKind::kSoftmax:
      return kernels::softmax(*in[0], normalize_axis(attrs_as<SoftmaxAttrs>(a).axis, out.size()));
    case OpKind::kLayoutTransform: {
      const auto lt = attrs_as<LayoutTransformAttrs>(a);
      return kernels::layout_transform(*in[0], lt.from_block, lt.to_block, out);
    }
    case OpKind::kShape:
      return kernels::shape_of(*in[0], attrs_as<ShapeAttrs>(a));
    case OpKind::kCast:
      return kernels::cast(*in[0], type.dtype);
    case OpKind::kSlice:
      return kernels::slice(*in[0], attrs_as<SliceAttrs>(a), out);
    case OpKind::kGather:
      return kernels::gather(
          *in[0], *in[1], normalize_axis(attrs_as<GatherAttrs>(a).axis, in[0]->shape.size()), out);
    case OpKind::kExp:
      return unary_math(kernels::MathOp::kExp);
    case OpKind::kLog:
      return unary_math(kernels::MathOp::kLog);
    case OpKind::kSqrt:
      return unary_math(kernels::MathOp::kSqrt);
    case OpKind::kErf:
      return unary_math(kernels::MathOp::kErf);
    case OpKind::kTanh:
      return unary_math(kernels::MathOp::kTanh);
    case OpKind::kNeg:
      return unary_math(kernels::MathOp::kNeg);
    case OpKind::kAbs:
      return unary_math(kernels::MathOp::kAbs);
    case OpKind::kFloor:
      return unary_math(kernels::MathOp::kFloor);
    case OpKind::kCeil:
      return unary_math(kernels::MathOp::kCeil);
    case OpKind::kRound:
      return unary_math(kernels::MathOp::kRound);
    case OpKind::kReciprocal:
      return unary_math(kernels::MathOp::kReciprocal);
    case OpKind::kSoftplus:
      return unary_math(kernels::MathOp::kSoftplus);
    case OpKind::kMish:
      return unary_math(kernels::MathOp::kMish);
    case OpKind::kNot:
      return unary_math(kernels::MathOp::kNot);
    case OpKind::kLeakyRelu:
      return unary_math(kernels::MathOp::kLeakyRelu);
    case OpKind::kElu:
      return unary_math(kernels::MathOp::kElu);
    case OpKind::kSelu:
      return unary_math(kernels::MathOp::kSelu);
    case OpKind::kGelu:
      return unary_math(kernels::MathOp::kGelu);
    case OpKind::kPow:
      return binary_math(kernels::MathBinaryOp::kPow);
    case OpKind::kMaximum:
      return binary_math(kernels::MathBinaryOp::kMaximum);
    case OpKind::kMinimum:
      return binary_math(kernels::MathBinaryOp::kMinimum);
    case OpKind::kPRelu:
      return binary_math(kernels::MathBinaryOp::kPRelu);
    case OpKind::kEqual:
      return binary_math(kernels::MathBinaryOp::kEqual);
    case OpKind::kLess:
      return binary_math(kernels::MathBinaryOp::kLess);
    case OpKind::kLessOrEqual:
      return binary_math(kernels::MathBinaryOp::kLessOrEqual);
    case OpKind::kGreater:
      return binary_math(kernels::MathBinaryOp::kGreater);
    case OpKind::kGreaterOrEqual:
      return binary_math(kernels::MathBinaryOp::kGreaterOrEqual);
    case OpKind::kAnd:
      return binary_math(kernels::MathBinaryOp::kAnd);
    case OpKind::kOr:
      return binary_math(kernels::MathBinaryOp::kOr);
    case OpKind::kXor:
      return binary_math(kernels::MathBinaryOp::kXor);
    case OpKind::kWhere:
      return kernels::where(*in[0], *in[1], *in[2], out);
    case OpKind::kMod:
      return kernels::mod(*in[0], *in[1], attrs_as<ModAttrs>(a).fmod != 0, type);
    case OpKind::kReduceMean:
      return reduce(kernels::ReduceOp::kMean);
    case OpKind::kReduceSum:
      return reduce(kernels::ReduceOp::kSum);
    case OpKind::kReduceMax:
      return reduce(kernels::ReduceOp::kMax);
    case OpKind::kReduceMin:
      return reduce(kernels::ReduceOp::kMin);
    case OpKind::kReduceProd:
      return reduce(kernels::ReduceOp::kProd);
    case OpKind::kReduceL2:
      return reduce(kernels::ReduceOp::kL2);
    case OpKind::kReduceL1:
      return reduce(kernels::ReduceOp::kL1);
    case OpKind::kReduceSumSquare:
      return reduce(kernels::ReduceOp::kSumSquare);
    case OpKind::kReduceLogSum:
      return reduce(kernels::ReduceOp::kLogSum);
    case OpKind::kReduceLogSumExp:
      return reduce(kernels::ReduceOp::kLogSumExp);
    case OpKind::kArgMax:
      return arg_reduce(kernels::ArgReduceOp::kArgMax);
    case OpKind::kArgMin:
      return arg_reduce(kernels::ArgReduceOp::kArgMin);
    case OpKind::kPad:
      return kernels::pad(*in[0], attrs_as<PadAttrs>(a), out);
    case OpKind::kExpand:
      return kernels::expand(*in[0], out);
    case OpKind::kTile:
      return kernels::tile(*in[0], out);
    case OpKind::kAttention:
      return kernels::attention(*in[0], *in[1], *in[2], in.size() > 3 ? in[3] : nullptr,
                                attrs_as<AttentionAttrs>(a).scale, out);
    case OpKind::kLayerNorm:
      return kernels::layer_norm(*in[0], *in[1], in.size() > 2 ? in[2] : nullptr,
                                 attrs_as<LayerNormAttrs>(a));
    case OpKind::kConv2dTranspose:
      return kernels::conv2d_transpose(*in[0], *in[1], attrs_as<Conv2dTransposeAttrs>(a), out);
    case OpKind::kGatherElements:
      return kernels::gather_elements(
          *in[0], *in[1], normalize_axis(attrs_as<GatherAttrs>(a).axis, in[0]->shape.size()));
    case OpKind::kResize:
      return kernels::resize(*in[0], attrs_as<ResizeAttrs>(a));
    case OpKind::kGatherND:
      return kernels::gather_nd(*in[0], *in[1], attrs_as<GatherNDAttrs>(a).batch_dims, out);
    case OpKind::kScatterND:
      return kernels::scatter_nd(*in[0], *in[1], *in[2], attrs_as<ScatterNDAttrs>(a));
    case OpKind::kTopKIndices:
      return kernels::top_k_indices(*in[0], attrs_as<TopKAttrs>(a), out);
    case OpKind::kConv2dInteger:
      return kernels::conv2d_integer(*in[0], *in[1], attrs_as<Conv2dAttrs>(a), out,
                                     in.size() > 2 ? in[2] : nullptr);
    case OpKind::kMatMulInteger:
      return kernels::matmul_integer(*in[0], *in[1], out);
    case OpKind::kMaxPool2dIndices:
      return kernels::max_pool2d_indices(*in[0], attrs_as<Pool2dAttrs>(a), out);
    case OpKind::kLogSoftmax:
      return kernels::log_softmax(*in[0],
                                  normalize_axis(attrs_as<SoftmaxAttrs>(a).axis, out.size()));
    case OpKind::kInstanceNorm:
      return kernels::instance_norm(*in[0], *in[1], *in[2], attrs_as<BatchNormAttrs>(a).epsilon);
  }
  return internal_error("no interpreter loop for operator " + std::string(op_name(node.op)));
}

Expected<Tensor> evaluate_on_constants(const Graph& graph, const Node& node,
                                       const std::vector<ValueId>& inputs,
                                       const TensorType& output_type) {
  std::vector<const Tensor*> values;
  Tensor shape_only;
  for (ValueId in : inputs) {
    if (graph.is_constant(in)) {
      values.push_back(graph.constant(in));
    } else {
      TT_CHECK(node.op == OpKind::kShape)
          << "folding " << node.name << " with a non-constant input";
      shape_only.shape = graph.type(in).shape;
      values.push_back(&shape_only);
    }
  }
  return evaluate_node(node, values, output_type);
}

Expected<std::vector<Tensor>> interpret(const Graph& graph,
                                        const std::map<std::string, Tensor>& inputs) {
  const auto& values = graph.values();
  std::vector<std::shared_ptr<const Tensor>> live(values.size());
  for (const auto& [name, tensor] : inputs) {
    const ValueId id = graph.find_input(name);
    if (id == kNoValue) {
      std::string names;
      for (ValueId in : graph.inputs()) names += (names.empty() ? "" : ", ") + values[in].name;
      return invalid_argument("input '" + name +
                              "' does not exist; the graph's inputs are: " + names);
    }
    if (tensor.type() != values[id].type)
      return invalid_argument("input '" + name + "' has type " + type_string(tensor.type()) +
                              ", the graph expects " + type_string(values[id].type));
    live[id] = std::make_shared<const Tensor>(tensor);
  }
  for (ValueId id : graph.inputs())
    if (!live[id]) return invalid_argument("input '" + values[id].name + "' is not given");
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].constant) live[i] = values[i].constant;

  // Free each intermediate after its last reader so that VGG-sized graphs stay small.
  std::vector<int> remaining = graph.use_counts();
  for (const Node& node : graph.nodes()) {
    std::vector<const Tensor*> in;
    for (ValueId id : node.inputs) in.push_back(live[id].get());
    auto result = evaluate_node(node, in, values[node.output].type);
    if (!result) return result.error().with_context("node '" + node.name + "'");
    live[node.output] = std::make_shared<const Tensor>(std::move(result).value());
    for (ValueId id : node.inputs)
      if (--remaining[id] == 0 && !values[id].constant) live[id].reset();
  }
  std::vector<Tensor> outputs;
  for (ValueId id : graph.outputs()) outputs.push_back(*live[id]);
  return outputs;
}

}  // namespace tensortune::graph
