// SimplifyEpilogue against the epilogue it rewrote, applied step by step as the kernels apply
// them (the interpreter's max, min and relu; round half to even), over values around every
// rounding and clipping boundary of a quantized layer's epilogue, per channel.
#include "compiler/passes/simplify_epilogue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tensortune::passes {
namespace {

using Kind = epilogue::EpilogueOp::Kind;

FusedOp step(Kind kind) {
  FusedOp f;
  f.op.kind = kind;
  return f;
}

FusedOp channel(Kind kind, std::vector<float> values) {
  FusedOp f = step(kind);
  f.param = graph::Tensor::from_floats({static_cast<int64_t>(values.size())}, values);
  return f;
}

FusedOp clip(float lo, float hi) {
  FusedOp f = step(Kind::kClip);
  f.op.lo = lo;
  f.op.hi = hi;
  return f;
}

float apply(const std::vector<FusedOp>& ops, float x, size_t c) {
  for (const FusedOp& f : ops) {
    const float p = f.param ? f.param->f32.at(c % f.param->f32.size()) : 0.0f;
    switch (f.op.kind) {
      case Kind::kAddChannel:
        x = x + p;
        break;
      case Kind::kMulChannel:
        x = x * p;
        break;
      case Kind::kDivChannel:
        x = x / p;
        break;
      case Kind::kRound:
        x = std::nearbyint(x);
        break;
      case Kind::kRelu:
        x = x > 0 ? x : 0;
        break;
      case Kind::kClip:
        x = x < f.op.lo ? f.op.lo : x;
        x = f.op.hi < x ? f.op.hi : x;
        break;
      default:
        ADD_FAILURE() << "no reference for step " << static_cast<int>(f.op.kind);
    }
  }
  return x;
}

std::vector<Kind> kinds(const std::vector<FusedOp>& ops) {
  std::vector<Kind> k;
  for (const auto& f : ops) k.push_back(f.op.kind);
  return k;
}

void expect_same_results(const std::vector<FusedOp>& before, const std::vector<FusedOp>& after,
                         size_t channels) {
  std::vector<float> xs;
  for (float x = -3000.0f; x <= 3000.0f; x += 0.03125f) xs.push_back(x);  // quarter steps too
  for (float big : {1e7f, 16777216.0f, 3e9f, 1e30f, INFINITY}) {
    xs.push_back(big);
    xs.push_back(-big);
  }
  for (size_t c = 0; c < channels; ++c)
    for (float x : xs)
      ASSERT_EQ(apply(after, x, c), apply(before, x, c)) << "x = " << x << ", channel " << c;
}

// relu6 then a quantize-dequantize pair (uint8, zero point 3): divide, round, multiply, one
// clip.
TEST(SimplifyEpilogue, AQuantizeDequantizePairAfterRelu6IsDivideRoundMultiplyClip) {
  const float s = 0.0234f;
  const std::vector<FusedOp> before = {channel(Kind::kMulChannel, {0.5f, 1.25f, 3.0f}),
                                       channel(Kind::kAddChannel, {-0.1f, 0.2f, 0.0f}),
                                       clip(0, 6),
                                       channel(Kind::kDivChannel, {s, s, s}),
                                       step(Kind::kRound),
                                       channel(Kind::kAddChannel, {3, 3, 3}),
                                       clip(0, 255),
                                       channel(Kind::kAddChannel, {-3, -3, -3}),
                                       channel(Kind::kMulChannel, {s, s, s})};
  const auto after = simplify_epilogue(before);
  EXPECT_EQ(kinds(after),
            (std::vector<Kind>{Kind::kMulChannel, Kind::kAddChannel, Kind::kDivChannel,
                               Kind::kRound, Kind::kMulChannel, Kind::kClip}));
  expect_same_results(before, after, 3);
}

// relu, then a quantization to int8 shifted into uint8 (zero point -5, + 128) as the next int8
// kernel reads it: the clips merge behind the adds.
TEST(SimplifyEpilogue, ReluThenAnInt8QuantizationKeepsOneClip) {
  const std::vector<FusedOp> before = {step(Kind::kRelu),  channel(Kind::kDivChannel, {0.05f}),
                                       step(Kind::kRound), channel(Kind::kAddChannel, {-5}),
                                       clip(-128, 127),    channel(Kind::kAddChannel, {128})};
  const auto after = simplify_epilogue(before);
  EXPECT_EQ(kinds(after), (std::vector<Kind>{Kind::kDivChannel, Kind::kRound, Kind::kAddChannel,
                                             Kind::kAddChannel, Kind::kClip}));
  expect_same_results(before, after, 1);
}

// Steps that are not monotone for every channel (per-channel scales, a negative multiplier, a
// tensor operand) keep the clip where it is.
TEST(SimplifyEpilogue, ClipsStayBeforeStepsThatDifferPerChannelOrReverseOrder) {
  const std::vector<FusedOp> per_channel = {clip(0, 6), channel(Kind::kDivChannel, {0.1f, 0.2f})};
  EXPECT_EQ(kinds(simplify_epilogue(per_channel)), kinds(per_channel));
  const std::vector<FusedOp> negative = {clip(0, 6), channel(Kind::kMulChannel, {-2.0f})};
  EXPECT_EQ(kinds(simplify_epilogue(negative)), kinds(negative));
  FusedOp residual = step(Kind::kAddTensor);
  residual.value = 7;
  const std::vector<FusedOp> tensor = {clip(0, 6), residual};
  EXPECT_EQ(kinds(simplify_epilogue(tensor)), kinds(tensor));
  // Disjoint clips stay two.
  const std::vector<FusedOp> disjoint = {clip(0, 1), clip(2, 3)};
  const auto after = simplify_epilogue(disjoint);
  EXPECT_EQ(after.size(), 2u);
  expect_same_results(disjoint, after, 1);
}

}  // namespace
}  // namespace tensortune::passes
