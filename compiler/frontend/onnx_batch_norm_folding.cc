#include "compiler/frontend/onnx_batch_norm_folding.h"

#include <cmath>
#include <map>
#include <set>

#include "compiler/frontend/onnx_graph_index.h"
#include "compiler/frontend/onnx_import_context.h"

namespace tensortune::frontend {

namespace {

/// A float initializer of `count` values, or nothing.
std::optional<graph::Tensor> channel_vector(const onnx::GraphProto& g, const OnnxGraphIndex& index,
                                            const std::string& name, int64_t count) {
  auto it = index.initializer.find(name);
  if (it == index.initializer.end()) return std::nullopt;
  auto t = tensor_from_proto(g.initializer(it->second));
  if (!t || t->dtype != graph::DType::kFloat32 || t->size() != count) return std::nullopt;
  return std::move(*t);
}

}  // namespace

Expected<int> fold_batch_norms(onnx::GraphProto* g) {
  int folded = 0;
  std::set<int> removed;
  {
    const OnnxGraphIndex index(*g);
    for (int i = 0; i < g->node_size(); ++i) {
      const onnx::NodeProto& bn = g->node(i);
      if (bn.op_type() != "BatchNormalization" || bn.input_size() != 5 || bn.output_size() != 1)
        continue;
      auto p = index.producer.find(bn.input(0));
      if (p == index.producer.end() || removed.count(p->second)) continue;
      onnx::NodeProto* conv = g->mutable_node(p->second);
      if (conv->op_type() != "Conv" || conv->output_size() != 1 || conv->input_size() < 2 ||
          index.readers_of(bn.input(0)).size() != 1)
        continue;
      // The weight and bias change: only this convolution may read them.
      const std::string weight_name = conv->input(1);
      const std::string bias_name = conv->input_size() > 2 ? conv->input(2) : "";
      if (!index.initializer.count(weight_name) || index.readers_of(weight_name).size() != 1)
        continue;
      if (!bias_name.empty() &&
          (!index.initializer.count(bias_name) || index.readers_of(bias_name).size() != 1))
        continue;
      auto weight = tensor_from_proto(g->initializer(index.initializer.at(weight_name)));
      if (!weight || weight->dtype != graph::DType::kFloat32 || weight->shape.empty()) continue;
      const int64_t channels = weight->shape[0];
      auto scale = channel_vector(*g, index, bn.input(1), channels);
      auto shift = channel_vector(*g, index, bn.input(2), channels);
      auto mean = channel_vector(*g, index, bn.input(3), channels);
      auto variance = channel_vector(*g, index, bn.input(4), channels);
      if (!scale || !shift || !mean || !variance) continue;
      std::optional<graph::Tensor> bias;
      if (!bias_name.empty()) {
        bias = channel_vector(*g, index, bias_name, channels);
        if (!bias) continue;
      }
      const double epsilon = NodeAttributes(bn).get_float("epsilon", 1e-5f);
      const int64_t per_channel = channels > 0 ? weight->size() / channels : 0;
      std::vector<float> folded_bias(static_cast<size_t>(channels));
      for (int64_t o = 0; o < channels; ++o) {
        const double factor =
            double(scale->f32[size_t(o)]) / std::sqrt(double(variance->f32[size_t(o)]) + epsilon);
        for (int64_t k = 0; k < per_channel; ++k) {
          float& w = weight->f32[size_t(o * per_channel + k)];
          w = static_cast<float>(double(w) * factor);
        }
        const double b = bias ? double(bias->f32[size_t(o)]) : 0.0;
        folded_bias[size_t(o)] = static_cast<float>((b - double(mean->f32[size_t(o)])) * factor +
                                                    double(shift->f32[size_t(o)]));
      }
      const std::string out = bn.output(0);
      tensor_to_proto(*weight, out + "_folded_weight", g->add_initializer());
      tensor_to_proto(graph::Tensor::from_floats({channels}, folded_bias), out + "_folded_bias",
                      g->add_initializer());
      conv->set_input(1, out + "_folded_weight");
      if (conv->input_size() > 2)
        conv->set_input(2, out + "_folded_bias");
      else
        conv->add_input(out + "_folded_bias");
      conv->set_output(0, out);
      removed.insert(i);
      ++folded;
    }
  }
  if (folded == 0) return 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < g->node_size(); ++i)
    if (!removed.count(i)) *kept.Add() = g->node(i);
  g->mutable_node()->Swap(&kept);
  // Initializers nothing reads any more (the old weights, biases, batch norm parameters) go.
  std::set<std::string> read;
  for (const auto& n : g->node())
    for (const auto& in : n.input()) read.insert(in);
  for (const auto& o : g->output()) read.insert(o.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  std::set<std::string> dropped;
  for (auto& t : *g->mutable_initializer()) {
    if (read.count(t.name()))
      *initializers.Add() = std::move(t);
    else
      dropped.insert(t.name());
  }
  g->mutable_initializer()->Swap(&initializers);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;  // IR < 4 lists them as inputs
  for (auto& in : *g->mutable_input())
    if (!dropped.count(in.name())) *inputs.Add() = std::move(in);
  g->mutable_input()->Swap(&inputs);
  return folded;
}

}  // namespace tensortune::frontend
