#pragma once
// A one-layer BERT-style encoder at any sequence length, built as exporters write it: token and
// position embeddings (positions a constant that depends on the length), a layer norm, Q/K/V
// projections as MatMul with weights, the heads split by Reshape + Transpose, scores scaled and
// masked by the attention-mask input as (1 - mask) * -10000, softmax over the keys, the product
// with V, the heads merged, a residual add and a layer norm. Outputs: the hidden states
// [1, tokens, 16] and the first token's ([1, 1, 16], BERT's pooler input).
#include <cstdint>
#include <map>
#include <string>

#include "compiler/graph/graph.h"
#include "compiler/graph/op_attrs.h"
#include "support/tensor.h"

namespace tensortune::testing {

inline graph::Tensor seeded(graph::Shape shape, uint64_t seed, float scale = 0.5f) {
  graph::Tensor t = graph::Tensor::zeros(std::move(shape));
  fill_uniform(t, seed, -scale, scale);
  return t;
}

struct EncoderOptions {
  /// "mean": the second output is the mean over the tokens (not exact under padding);
  /// "last": the last token's; "merge": the heads reshaped into the token axis.
  std::string variant;
};

inline graph::Graph tiny_encoder(int64_t tokens, const EncoderOptions& options = {}) {
  using graph::DType;
  using graph::Ints;
  using graph::OpKind;
  using graph::Tensor;
  constexpr int64_t kVocab = 50, kDim = 16, kHeads = 2, kHeadDim = 8;
  graph::Graph g("tiny_encoder");
  auto ids = g.add_input("input_ids", {DType::kInt64, {1, tokens}});
  auto mask = g.add_input("attention_mask", {DType::kInt64, {1, tokens}});
  auto words = g.add_constant("words", seeded({kVocab, kDim}, 1));
  auto places = g.add_constant("places", seeded({64, kDim}, 2));
  std::vector<int64_t> arange(static_cast<size_t>(tokens));
  for (int64_t i = 0; i < tokens; ++i) arange[static_cast<size_t>(i)] = i;
  auto positions = g.add_constant("positions", Tensor::from_ints({1, tokens}, arange));
  auto x = *g.add_node(
      OpKind::kAdd, "embed",
      {*g.add_node(OpKind::kGather, "word", {words, ids}, {{"axis", int64_t{0}}}),
       *g.add_node(OpKind::kGather, "place", {places, positions}, {{"axis", int64_t{0}}})});
  auto norm = [&](const std::string& name, graph::ValueId v, uint64_t seed) {
    return *g.add_node(OpKind::kLayerNorm, name,
                       {v, g.add_constant(name + ".gamma", seeded({kDim}, seed, 1.0f)),
                        g.add_constant(name + ".beta", seeded({kDim}, seed + 1))},
                       {{"axis", int64_t{-1}}, {"epsilon", 1e-5}});
  };
  x = norm("norm0", x, 3);
  auto heads = [&](const std::string& name, uint64_t seed, Ints perm) {
    auto w = g.add_constant(name + ".weight", seeded({kDim, kDim}, seed));
    auto y = *g.add_node(OpKind::kMatMul, name, {x, w});
    auto split = *g.add_node(OpKind::kReshape, name + ".split", {y},
                             {{"shape", Ints{1, tokens, kHeads, kHeadDim}}});
    return *g.add_node(OpKind::kTranspose, name + ".heads", {split}, {{"perm", perm}});
  };
  auto q = heads("q", 10, {0, 2, 1, 3});
  auto kt = heads("k", 11, {0, 2, 3, 1});
  auto v = heads("v", 12, {0, 2, 1, 3});
  auto scores = *g.add_node(OpKind::kMatMul, "scores", {q, kt});
  scores = *g.add_node(OpKind::kMultiply, "scale",
                       {scores, g.add_constant("inv_sqrt_d", Tensor::from_floats({}, {0.35f}))});
  // (1 - mask) * -10000, broadcast over heads and queries.
  auto m = *g.add_node(OpKind::kCast, "mask.float", {mask},
                       {{"to", static_cast<int64_t>(DType::kFloat32)}});
  m = *g.add_node(OpKind::kSubtract, "mask.invert",
                  {g.add_constant("one", Tensor::from_floats({}, {1.0f})), m});
  m = *g.add_node(OpKind::kMultiply, "mask.bias",
                  {m, g.add_constant("minus", Tensor::from_floats({}, {-10000.0f}))});
  m = *g.add_node(OpKind::kUnsqueeze, "mask.spread", {m}, {{"axes", Ints{1, 2}}});
  scores = *g.add_node(OpKind::kAdd, "mask.add", {scores, m});
  auto probs = *g.add_node(OpKind::kSoftmax, "softmax", {scores}, {{"axis", int64_t{-1}}});
  auto context = *g.add_node(OpKind::kMatMul, "context", {probs, v});
  context =
      *g.add_node(OpKind::kTranspose, "context.merge", {context}, {{"perm", Ints{0, 2, 1, 3}}});
  context =
      *g.add_node(OpKind::kReshape, "context.flat", {context}, {{"shape", Ints{1, tokens, kDim}}});
  auto hidden = norm("norm1", *g.add_node(OpKind::kAdd, "residual", {x, context}), 5);
  g.add_output(hidden, "hidden");
  if (options.variant == "mean") {
    g.add_output(*g.add_node(OpKind::kReduceMean, "pool", {hidden},
                             {{"axes", Ints{1}}, {"keepdims", int64_t{1}}}),
                 "pooled");
  } else if (options.variant == "last") {
    g.add_output(*g.add_node(OpKind::kSlice, "last_token", {hidden},
                             {{"starts", Ints{-1}},
                              {"ends", Ints{INT64_MAX}},
                              {"axes", Ints{1}},
                              {"steps", Ints{1}}}),
                 "last");
  } else if (options.variant == "merge") {
    g.add_output(*g.add_node(OpKind::kReshape, "tokens_by_heads", {q},
                             {{"shape", Ints{1, kHeads * tokens, kHeadDim}}}),
                 "merged");
  } else {
    g.add_output(
        *g.add_node(
            OpKind::kSlice, "first_token", {hidden},
            {{"starts", Ints{0}}, {"ends", Ints{1}}, {"axes", Ints{1}}, {"steps", Ints{1}}}),
        "first");
  }
  return g;
}

/// Token ids and an attention mask of `tokens`, the last `padding` of them masked by the model's
/// own mask (as a user's batch pads).
inline std::map<std::string, graph::Tensor> encoder_inputs(int64_t tokens, int64_t padding = 0) {
  std::vector<int64_t> ids, mask;
  for (int64_t i = 0; i < tokens; ++i) {
    ids.push_back((i * 7 + 3) % 50);
    mask.push_back(i < tokens - padding ? 1 : 0);
  }
  return {{"input_ids", graph::Tensor::from_ints({1, tokens}, ids)},
          {"attention_mask", graph::Tensor::from_ints({1, tokens}, mask)}};
}

}  // namespace tensortune::testing
