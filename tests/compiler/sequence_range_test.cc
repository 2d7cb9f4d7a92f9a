// Sequence ranges at the graph level: a bucket's graph, its inputs zero-padded and its softmax
// masked, computes at the real positions what the graph at the real length computes (the
// reference interpreter on both); padding without the mask does not; what padding would make
// inexact is refused, naming the node.
#include "compiler/graph/sequence_range.h"

#include <gtest/gtest.h>

#include "compiler/graph/interpreter.h"
#include "tests/compiler/tiny_encoder.h"

namespace tensortune::graph {
namespace {

using testing::encoder_inputs;
using testing::EncoderOptions;
using testing::tiny_encoder;

SequenceRange encoder_range(int64_t lo, int64_t hi) {
  return {lo, hi, {{"input_ids", 1}, {"attention_mask", 1}}};
}

Expected<SequencePlan> plan_for(const SequenceRange& range, const EncoderOptions& options = {}) {
  return plan_sequence_range(
      range, [&](int64_t n) -> Expected<Graph> { return tiny_encoder(n, options); });
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  double d = 0;
  for (int64_t i = 0; i < std::min(a.size(), b.size()); ++i)
    d = std::max(d, std::abs(a.at(i) - b.at(i)));
  return d;
}

/// The bucket's graph run on `length` padded tokens, its outputs cut back to the length.
std::vector<Tensor> run_padded(const SequencePlan& plan, int64_t bucket, int64_t length,
                               int64_t padding, bool masked) {
  Graph g = tiny_encoder(bucket);
  if (masked) g = *mask_sequence_padding(g, plan, bucket);
  std::map<std::string, Tensor> inputs;
  for (auto& [name, t] : encoder_inputs(length, padding)) inputs[name] = resize_box(t, {1, bucket});
  // The model's own mask does not cover the padding (as in a model that takes none): only the
  // plan's mask keeps the padded keys out.
  for (int64_t i = length; i < bucket; ++i) inputs["attention_mask"].i64[i] = 1;
  if (masked) inputs[kSequenceMaskInput] = sequence_mask(bucket, length);
  auto out = interpret(g, inputs);
  EXPECT_TRUE(out) << out.error().message;
  std::vector<Tensor> cut;
  for (size_t i = 0; out && i < out->size(); ++i) {
    Shape shape = (*out)[i].shape;
    for (int axis : plan.output_axes[i]) shape[static_cast<size_t>(axis)] = length;
    cut.push_back(resize_box((*out)[i], shape));
  }
  return cut;
}

TEST(SequenceRange, BucketsArePowersOfTwoThenTheTop) {
  EXPECT_EQ(sequence_buckets(1, 512),
            (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}));
  EXPECT_EQ(sequence_buckets(100, 300), (std::vector<int64_t>{128, 256, 300}));
  EXPECT_EQ(sequence_buckets(3, 4), (std::vector<int64_t>{4}));
  EXPECT_EQ(sequence_buckets(1, 64, true),
            (std::vector<int64_t>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}));
  EXPECT_EQ(sequence_buckets(100, 300, true), (std::vector<int64_t>{128, 192, 256, 300}));
  // Explicit buckets are checked; none given: half octaves.
  EXPECT_EQ(*buckets_of({1, 8, {}, {}}), (std::vector<int64_t>{1, 2, 3, 4, 6, 8}));
  EXPECT_EQ(*buckets_of({1, 8, {}, {4, 8}}), (std::vector<int64_t>{4, 8}));
  EXPECT_FALSE(buckets_of({1, 8, {}, {4}}));
  EXPECT_FALSE(buckets_of({1, 8, {}, {8, 4, 8}}));
  EXPECT_FALSE(buckets_of({2, 8, {}, {1, 8}}));
  const auto b = sequence_buckets(100, 300);
  EXPECT_EQ(bucket_for_length(b, 100), 128);
  EXPECT_EQ(bucket_for_length(b, 128), 128);
  EXPECT_EQ(bucket_for_length(b, 129), 256);
  EXPECT_EQ(bucket_for_length(b, 257), 300);
}

TEST(SequenceRange, ResizeBoxPadsWithZerosAndCuts) {
  const Tensor t = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor padded = resize_box(t, {3, 4});
  EXPECT_EQ(padded.f32, (std::vector<float>{1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0}));
  EXPECT_EQ(resize_box(padded, {2, 3}).f32, t.f32);
  EXPECT_EQ(resize_box(t, {1, 2}).f32, (std::vector<float>{1, 2}));
}

TEST(SequenceRange, TheEncoderPlanMasksItsSoftmaxAndCutsTheTokenAxis) {
  auto plan = plan_for(encoder_range(1, 16));
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->masks.size(), 1u);
  EXPECT_EQ(plan->masks[0].node, "softmax");
  EXPECT_EQ(plan->masks[0].axis, 3);
  ASSERT_EQ(plan->output_axes.size(), 2u);
  EXPECT_EQ(plan->output_axes[0], std::vector<int>{1});  // hidden [1, tokens, 16]
  EXPECT_TRUE(plan->output_axes[1].empty());             // the first token: always real
}

TEST(SequenceRange, PaddedAndMaskedBucketsComputeTheRealLengthsOutputs) {
  auto plan = plan_for(encoder_range(1, 16));
  ASSERT_TRUE(plan) << plan.error().message;
  const auto buckets = sequence_buckets(1, 16);
  for (int64_t length : {1, 3, 5, 8, 11, 16}) {
    for (int64_t padding : {int64_t{0}, length / 3}) {  // the model's own mask as well
      SCOPED_TRACE("length " + std::to_string(length) + ", model-masked " +
                   std::to_string(padding));
      const int64_t bucket = bucket_for_length(buckets, length);
      auto want = interpret(tiny_encoder(length), encoder_inputs(length, padding));
      ASSERT_TRUE(want) << want.error().message;
      const auto got = run_padded(*plan, bucket, length, padding, true);
      ASSERT_EQ(got.size(), want->size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_LE(max_abs_difference(got[i], (*want)[i]), 1e-5) << "output " << i;
      // Without the mask the padded keys take part in every real token's attention.
      if (bucket != length) {
        const auto unmasked = run_padded(*plan, bucket, length, padding, false);
        EXPECT_GT(max_abs_difference(unmasked[0], (*want)[0]), 1e-3);
      }
    }
  }
}

TEST(SequenceRange, WhatPaddingWouldMakeInexactIsRefusedNamingTheNode) {
  const struct {
    const char* variant;
    const char* node;
  } cases[] = {{"mean", "node 'pool' (reduce_mean) reduces over the sequence"},
               {"last", "node 'last_token' (slice) reads positions"},
               {"merge", "node 'tokens_by_heads' (reshape)"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.variant);
    auto plan = plan_for(encoder_range(1, 16), {c.variant});
    ASSERT_FALSE(plan);
    EXPECT_NE(plan.error().message.find(c.node), std::string::npos) << plan.error().message;
  }
  // The first token is exact only while every length of the range has one... and 0..16 has a
  // length without: a range starts at 1.
  EXPECT_FALSE(plan_for(encoder_range(0, 16)));
  auto no_axis = plan_for({1, 16, {{"input_ids", 0}}});
  ASSERT_FALSE(no_axis);
  EXPECT_NE(no_axis.error().message.find("input 'input_ids' has no axis 0"), std::string::npos)
      << no_axis.error().message;
  auto unknown = plan_for({1, 16, {{"tokens", 1}}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'tokens'"), std::string::npos);
}

}  // namespace
}  // namespace tensortune::graph
