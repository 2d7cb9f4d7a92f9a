// Generated attention.x86 kernels compute softmax(scale * q k^T + mask) v as the double
// reference does, for every valid config of small spaces: key blocks with vector tails, values
// narrower and wider than a vector, masks broadcast over heads and rows or given per row, and
// scores far apart (a later block's maximum far above an earlier one's: the online softmax's
// correction, and masked keys whose exponentials underflow to zero).
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "schedule_space/attention_template.h"
#include "tests/compiler/every_config.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tt::Tensor;

namespace {

tt::measure::OperatorInputs random_inputs(const ss::AttentionWorkload& w, uint64_t seed) {
  const ss::OperandShapes shapes = ss::operand_shapes(w);
  tt::measure::OperatorInputs in;
  in.data = Tensor::zeros(shapes.data);
  in.weight = Tensor::zeros(shapes.weight);
  tt::fill_uniform(in.data, seed);
  tt::fill_uniform(in.weight, seed + 1);
  return in;
}

void check_all(const ss::AttentionWorkload& w, const tt::measure::OperatorInputs& in,
               int min_checked) {
  auto task = ss::make_task(ss::kAttentionX86, w, tt::codegen::host_target());
  ASSERT_TRUE(task.has_value()) << task.error().message;
  const Tensor want = tt::measure::attention_reference(in.data, in.weight, nullptr, w);
  tt::testing::expect_every_config_computes(*task, in, want, min_checked);
}

TEST(AttentionKernel, WithoutAMaskEveryConfigMatchesTheReference) {
  const ss::AttentionWorkload w{3, 8, 40, 16, 24, 0, 0, 0.25};
  check_all(w, random_inputs(w, 1), 12);
}

TEST(AttentionKernel, AMaskBroadcastOverHeadsAndRows) {
  // Two sequences of three heads each: entry b reads mask entry b / 3.
  const ss::AttentionWorkload w{6, 4, 20, 8, 8, 2, 1, 0.5};
  check_all(w, random_inputs(w, 3), 8);
}

TEST(AttentionKernel, AMaskPerRowAndOddSizes) {
  const ss::AttentionWorkload w{2, 5, 21, 5, 17, 1, 5, 1.0};
  check_all(w, random_inputs(w, 5), 4);
}

TEST(AttentionKernel, RowsAndKeysThatNoTileDividesLeaveTails) {
  // 7 rows and 37 keys (a ViT's 197 tokens are prime): tiles of 2 or 4 rows end in a shorter
  // one, blocks of 8, 16 or 32 keys in a shorter block.
  const ss::AttentionWorkload w{3, 7, 37, 8, 20, 3, 7, 0.7};
  check_all(w, random_inputs(w, 9), 16);
}

TEST(AttentionKernel, ScoresFarApartAndMaskedKeys) {
  // Scores spread over about +-40 growing along the keys, so each block's maximum is far above
  // the last and every correction matters; every third key masked by -10000 (BERT's padding).
  const ss::AttentionWorkload w{2, 4, 64, 16, 16, 1, 1, 1.0};
  auto in = random_inputs(w, 7);
  const auto at = ss::attention_operand_offsets(w);
  for (int64_t b = 0; b < w.batch; ++b)
    for (int64_t k = 0; k < w.k; ++k)
      for (int64_t n = 0; n < w.n; ++n) in.weight.f32[(b * w.k + k) * w.n + n] *= 0.1f * n;
  for (int64_t n = 0; n < w.n; ++n) in.weight.f32[at.mask + n] = n % 3 == 0 ? -10000.0f : 0.0f;
  for (float& x : in.data.f32) x *= 3.0f;
  check_all(w, in, 10);
}

TEST(AttentionKernel, KeysMaskedByMinusInfinityAsPaddingMasksDo) {
  // A mask per row: the last 9 keys of every row -infinity (a padded sequence), and row 1's
  // first 20 too, so that its first blocks hold no key at all (their exponentials 0, not NaN).
  const ss::AttentionWorkload w{2, 3, 40, 8, 8, 1, 3, 0.5};
  auto in = random_inputs(w, 11);
  const auto at = ss::attention_operand_offsets(w);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t n = 0; n < w.n; ++n)
      if (n >= 31 || (r == 1 && n < 20)) in.weight.f32[at.mask + r * w.n + n] = -INFINITY;
  check_all(w, in, 10);
}

// On 16 lanes (AVX-512) the default's tiles fit: 4 rows of 64 keys are 16 registers; on 8
// (AVX2) their 64 values would take 32 of the 28 registers a tile may hold.
TEST(AttentionKernel, TheSpaceAndItsDefault) {
  const ss::AttentionWorkload w{12, 128, 128, 64, 64, 1, 1, 0.125};
  ss::Target wide = tt::codegen::host_target();
  wide.vector_lanes = 16;
  auto task = ss::make_task(ss::kAttentionX86, w, wide);
  ASSERT_TRUE(task.has_value()) << task.error().message;
  auto space = ss::make_config_space(*task);
  ASSERT_TRUE(space.has_value());
  // tile_x: the divisors of 128 (its powers of two); tile_y those and every count up to 8.
  EXPECT_EQ(space->size(), 12 * 8);
  const ss::Config def = ss::default_config(*task, *space);
  ASSERT_TRUE(space->is_valid(def));
  const ss::AttentionSchedule s = ss::attention_schedule(*space, def);
  EXPECT_EQ(s.yi, 4);
  EXPECT_EQ(s.xi, 64);
  // The tuning kernel's weight buffer: k^T, v, then the mask.
  EXPECT_EQ(ss::operand_shapes(w).weight,
            (std::vector<int64_t>{12 * 128 * 64 + 12 * 128 * 64 + 128}));
  EXPECT_DOUBLE_EQ(ss::workload_flop(w), 2.0 * 12 * 128 * 128 * 128);

  ss::Target narrow = wide;
  narrow.vector_lanes = 8;
  auto avx2 = ss::make_task(ss::kAttentionX86, w, narrow);
  ASSERT_TRUE(avx2.has_value()) << avx2.error().message;
  auto avx2_space = ss::make_config_space(*avx2);
  ASSERT_TRUE(avx2_space.has_value());
  const ss::Config fallback = ss::default_config(*avx2, *avx2_space);
  ASSERT_TRUE(avx2_space->is_valid(fallback));
  const ss::AttentionSchedule f = ss::attention_schedule(*avx2_space, fallback);
  // The largest tile within 4 x 64 that fits: 3 rows (24 output registers) of 64 keys, not the
  // space's first valid config (one row by one key).
  EXPECT_EQ(f.yi, 3);
  EXPECT_EQ(f.xi, 64);
}

TEST(AttentionKernel, WorkloadsOutsideTheContractAreRefusedNamingTheField) {
  ss::AttentionWorkload w{6, 4, 20, 8, 8, 4, 1, 0.5};  // 4 does not divide 6
  auto s = ss::validate(w);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("mask_batch = 4"), std::string::npos) << s.error().message;
  w.mask_batch = 2;
  w.mask_rows = 3;  // neither 1 nor m
  s = ss::validate(w);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("mask_rows = 3"), std::string::npos) << s.error().message;
  w.mask_rows = 1;
  w.scale = INFINITY;
  EXPECT_FALSE(ss::validate(w));
  w.scale = 0.5;
  EXPECT_TRUE(ss::validate(w));
}

}  // namespace
