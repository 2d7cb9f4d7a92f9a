// Borrowing configs between workloads: checked against brute force over the target space.
#include "schedule_space/config_transfer.h"

#include <gtest/gtest.h>

#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/dense_template.h"

namespace tensortune::schedule_space {
namespace {

int64_t inner(const KnobValue& v) { return std::get<std::vector<int64_t>>(v).back(); }

// Every (reference config, target) pair over a sample of spaces: the transferred config is
// valid, and each split's inner factor is the largest candidate not above the reference's
// when that choice alone is valid (brute force over the candidates).
TEST(ConfigTransfer, SplitsTakeTheLargestFactorNotAboveTheReferencesAndStayValid) {
  const ConfigSpace reference = conv2d_nchwc_space(square_conv2d(64, 56, 64, 3, 1), 16);
  const std::vector<Conv2dWorkload> targets = {
      square_conv2d(96, 28, 192, 3, 1), square_conv2d(3, 224, 64, 7, 2),
      square_conv2d(256, 14, 256, 3, 1), square_conv2d(48, 17, 80, 3, 2)};
  for (const auto& w : targets) {
    const ConfigSpace target = conv2d_nchwc_space(w, 16);
    for (int64_t i = 0; i < reference.size(); i += 7) {
      if (!reference.is_valid_index(i)) continue;
      const Config ref = *reference.config_at(i);
      auto moved = transfer_config(target, reference, ref);
      ASSERT_TRUE(moved) << moved.error().message;
      EXPECT_TRUE(target.is_valid(*moved)) << target.describe(*moved);
      // Block sizes (tile_ic, tile_oc) decide layouts and never shrink for validity.
      for (const char* knob : {"tile_ic", "tile_oc"}) {
        const int64_t wanted = inner(reference.value(ref, knob));
        int64_t best = 0;
        for (const KnobValue& c : target.knobs()[target.knob_position(knob)].options)
          if (inner(c) <= wanted) best = std::max(best, inner(c));
        EXPECT_EQ(inner(target.value(*moved, knob)), best)
            << knob << " from " << reference.describe(ref);
      }
      EXPECT_LE(inner(target.value(*moved, "tile_ow")), inner(reference.value(ref, "tile_ow")));
      EXPECT_EQ(std::get<bool>(target.value(*moved, "oc_inner")),
                std::get<bool>(reference.value(ref, "oc_inner")));
      // A split reduction stays split where the target's weights need two slices or more.
      const Conv2dSchedule r = conv2d_nchwc_schedule(reference, ref);
      const Conv2dSchedule m = conv2d_nchwc_schedule(target, *moved);
      const bool can_split =
          reduction_slice_chunks(w, m.ic_bn, m.oc_bn) < w.in_channels / m.ic_bn &&
          4 * m.reg_h * w.out_width() * m.oc_bn <= kPartialSumBytes;
      EXPECT_EQ(m.split_reduction, r.split_reduction && can_split) << reference.describe(ref);
    }
  }
}

TEST(ConfigTransfer, AnInvalidRecordShrinksItsRegisterTileNotItsBlocks) {
  const ConfigSpace space = conv2d_nchwc_space(square_conv2d(64, 56, 128, 3, 1), 16);
  // oc_bn 64 (4 vectors) x reg_n 28 x 1 row = 112 accumulators: over the budget of 28.
  Entity e = {{"tile_ic", std::vector<int64_t>{-1, 16}},
              {"tile_oc", std::vector<int64_t>{-1, 64}},
              {"tile_ow", std::vector<int64_t>{-1, 28}}};
  const Config big = *space.config_from_entity(e);
  ASSERT_FALSE(space.is_valid(big));
  auto fitted = transfer_config(space, space, big);
  ASSERT_TRUE(fitted);
  EXPECT_TRUE(space.is_valid(*fitted));
  const Conv2dSchedule s = conv2d_nchwc_schedule(space, *fitted);
  EXPECT_EQ(s.ic_bn, 16);
  EXPECT_EQ(s.oc_bn, 64);
  EXPECT_EQ(s.reg_n * 4, kMaxAccumulators) << "the largest tile that fits";
}

TEST(ConfigTransfer, AffinityPrefersSharedDivisorsAndTheSameTemplate) {
  const ConfigSpace target = conv2d_nchwc_space(square_conv2d(128, 28, 128, 3, 1), 16);
  const ConfigSpace near = conv2d_nchwc_space(square_conv2d(128, 28, 192, 3, 1), 16);
  const ConfigSpace far = conv2d_nchwc_space(square_conv2d(3, 224, 64, 7, 2), 16);
  const ConfigSpace other_kind = conv2d_nchwc_space(square_conv2d(128, 28, 128, 1, 1), 16);
  EXPECT_GT(transfer_affinity(target, target), transfer_affinity(target, near));
  EXPECT_GT(transfer_affinity(target, near), transfer_affinity(target, far));
  EXPECT_GT(transfer_affinity(target, near), transfer_affinity(target, other_kind))
      << "1x1 has other knobs";
  EXPECT_EQ(transfer_affinity(target, dense_space(DenseWorkload{1, 128, 128}, true, 16)), 0);
}

}  // namespace
}  // namespace tensortune::schedule_space
