// Index <-> config round trips over whole spaces; split candidates match AutoTVM's counts and
// the decode of a real AutoTVM log line.
#include <gtest/gtest.h>

#include <set>

#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/task.h"

namespace ss = tensortune::schedule_space;

namespace {

ss::Task resnet_task(int64_t c, int64_t hw, int64_t oc, int64_t k, int64_t s, int64_t p) {
  ss::Conv2dWorkload w;
  w.in_channels = c;
  w.in_height = w.in_width = hw;
  w.out_channels = oc;
  w.kernel_h = w.kernel_w = k;
  w.stride_h = w.stride_w = s;
  w.pad_top = w.pad_left = w.pad_bottom = w.pad_right = p;
  return *ss::make_task(ss::kConv2dNCHWc, w, ss::Target{"llvm -keys=cpu", 16});
}

TEST(ConfigSpace, IndexRoundTripOverWholeSpaces) {
  for (const ss::Task& t : {resnet_task(64, 56, 64, 3, 1, 1), resnet_task(256, 14, 512, 1, 2, 0)}) {
    auto space = *ss::make_config_space(t);
    std::set<std::vector<int32_t>> seen;
    for (int64_t i = 0; i < space.size(); ++i) {
      auto c = space.config_at(i);
      ASSERT_TRUE(c.has_value());
      EXPECT_TRUE(seen.insert(c->digits).second);
      auto back = space.config_from_digits(c->digits);
      ASSERT_TRUE(back.has_value());
      ASSERT_EQ(back->index, i);
      auto from_entity = space.config_from_entity(space.entity_of(*c));
      ASSERT_TRUE(from_entity.has_value());
      ASSERT_EQ(from_entity->index, i);
    }
  }
}

TEST(ConfigSpace, FirstKnobVariesFastest) {
  auto space = *ss::make_config_space(resnet_task(64, 56, 64, 3, 1, 1));
  auto c0 = *space.config_at(0);
  auto c1 = *space.config_at(1);
  EXPECT_EQ(c1.digits[0], c0.digits[0] + 1);
  const int64_t dim0 = static_cast<int64_t>(space.knobs()[0].options.size());
  auto c = *space.config_at(dim0);
  EXPECT_EQ(c.digits[0], 0);
  EXPECT_EQ(c.digits[1], 1);
}

TEST(ConfigSpace, AutoTvmKnobCountsForResnetLayers) {
  // AutoTVM's conv2d_NCHWc space for (64, 64, 56, 3x3) is 7 * 7 * 10 * 2 with tile_ow
  // 'verbose' (divisors of 56 and powers of two up to 56: 1 2 4 7 8 14 16 28 32 56).
  auto space = *ss::make_config_space(resnet_task(64, 56, 64, 3, 1, 1));
  ASSERT_GE(space.knobs().size(), 4u);
  EXPECT_EQ(space.knobs()[0].name, "tile_ic");
  EXPECT_EQ(space.knobs()[0].options.size(), 7u);
  EXPECT_EQ(space.knobs()[1].options.size(), 7u);
  EXPECT_EQ(space.knobs()[2].name, "tile_ow");
  EXPECT_EQ(space.knobs()[2].options.size(), 10u);
  EXPECT_EQ(space.knobs()[3].name, "unroll_kw");
  // 1x1 (256 -> 1024, 14x14): 9 * 11 * 6, then tile_oh.
  auto one = *ss::make_config_space(resnet_task(256, 14, 1024, 1, 1, 0));
  EXPECT_EQ(one.knobs()[0].options.size(), 9u);
  EXPECT_EQ(one.knobs()[1].options.size(), 11u);
  EXPECT_EQ(one.knobs()[2].options.size(), 6u);
  EXPECT_EQ(one.knobs()[3].name, "tile_oh");
}

TEST(ConfigSpace, SplitCountFormula) {
  // 4-way split of 256 = 2^8: C(8+3, 3) = 165; 3-way of 1000 = 2^3 5^3: C(5,2)^2 = 100.
  EXPECT_EQ(ss::make_split_knob("x", 256, 4, ss::SplitPolicy::kFactors).options.size(), 165u);
  EXPECT_EQ(ss::make_split_knob("x", 1000, 3, ss::SplitPolicy::kFactors).options.size(), 100u);
  auto k = ss::make_split_knob("x", 12, 2, ss::SplitPolicy::kFactors);
  EXPECT_EQ(k.options.front(), ss::KnobValue(std::vector<int64_t>{-1, 1}));
  EXPECT_EQ(k.options.back(), ss::KnobValue(std::vector<int64_t>{-1, 12}));
}

// Multi-way splits in AutoTVM's candidate order, written out by hand from its DFS (stack
// positions s0, s1 with s1 varying fastest; entity [-1, s1, s0]): a config index means the
// same split in our spaces and in AutoTVM's logs.
TEST(ConfigSpace, MultiWaySplitsFollowAutoTvmOrder) {
  using V = std::vector<int64_t>;
  const auto three = ss::make_split_knob("x", 4, 3, ss::SplitPolicy::kFactors);
  const std::vector<V> want3 = {{-1, 1, 1}, {-1, 2, 1}, {-1, 4, 1},
                                {-1, 1, 2}, {-1, 2, 2}, {-1, 1, 4}};
  ASSERT_EQ(three.options.size(), want3.size());
  for (size_t i = 0; i < want3.size(); ++i)
    EXPECT_EQ(three.options[i], ss::KnobValue(want3[i])) << "candidate " << i;
  // 4-way of 2: stack (s0, s1, s2), s2 fastest; entity [-1, s2, s1, s0].
  const auto four = ss::make_split_knob("x", 2, 4, ss::SplitPolicy::kFactors);
  const std::vector<V> want4 = {{-1, 1, 1, 1}, {-1, 2, 1, 1}, {-1, 1, 2, 1}, {-1, 1, 1, 2}};
  ASSERT_EQ(four.options.size(), want4.size());
  for (size_t i = 0; i < want4.size(); ++i)
    EXPECT_EQ(four.options[i], ss::KnobValue(want4[i])) << "candidate " << i;
}

TEST(ConfigSpace, OutOfRangeIndexAndUnknownKnobAreErrors) {
  auto space = *ss::make_config_space(resnet_task(64, 56, 64, 3, 1, 1));
  auto bad = space.config_at(space.size());
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(
      bad.error().message.find("config index " + std::to_string(space.size()) +
                               " is outside the space [0, " + std::to_string(space.size()) + ")"),
      std::string::npos);
  EXPECT_FALSE(space.config_at(-1).has_value());
  auto unknown = space.config_from_entity({{"tile_zz", ss::KnobValue(int64_t{1})}});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("unknown knob 'tile_zz'"), std::string::npos);
  auto bad_value =
      space.config_from_entity({{"tile_ic", ss::KnobValue(std::vector<int64_t>{-1, 3})}});
  ASSERT_FALSE(bad_value.has_value());
  EXPECT_NE(bad_value.error().message.find("tile_ic value [-1, 3] is not one of"),
            std::string::npos);
}

TEST(ConfigSpace, AutoTvmLogEntityMapsIn) {
  // From a TVM 0.10 log (RESEARCH.md 2.2): conv1 of ResNet, index 172 in AutoTVM's space.
  auto space = *ss::make_config_space(resnet_task(3, 224, 64, 7, 2, 3));
  ss::Entity e{{"tile_ic", std::vector<int64_t>{-1, 1}},
               {"tile_oc", std::vector<int64_t>{-1, 4}},
               {"tile_ow", std::vector<int64_t>{-1, 1}},
               {"unroll_kw", false}};
  auto c = space.config_from_entity(e);
  ASSERT_TRUE(c.has_value()) << c.error().message;
  auto s = ss::conv2d_nchwc_schedule(space, *c);
  EXPECT_EQ(s.ic_bn, 1);
  EXPECT_EQ(s.oc_bn, 4);
  EXPECT_EQ(s.reg_n, 1);
  EXPECT_FALSE(s.unroll_kw);
  EXPECT_EQ(s.reg_h, 1);  // our extra knob takes AutoTVM's behaviour
}

// AutoTVM's fallback with two vectors of output channels: its row as wide as the registers
// allow for them.
TEST(ConfigSpace, DefaultConfigIsAutoTvmsFallbackOfTwoVectors) {
  auto t = resnet_task(64, 56, 128, 3, 2, 1);
  auto space = *ss::make_config_space(t);
  auto s = ss::conv2d_nchwc_schedule(space, ss::default_config(t, space));
  EXPECT_EQ(s.oc_bn, 32);
  EXPECT_EQ(s.ic_bn, 32);
  EXPECT_EQ(s.reg_n, 14);  // largest divisor of OW=28 whose 2-vector row holds <= 28 sums
  EXPECT_EQ(s.reg_h, 1);
  EXPECT_FALSE(s.unroll_kw);
  // Where two vectors do not divide the channels: the largest block that does.
  auto odd = resnet_task(24, 28, 24, 3, 1, 1);
  auto odd_space = *ss::make_config_space(odd);
  EXPECT_EQ(ss::conv2d_nchwc_schedule(odd_space, ss::default_config(odd, odd_space)).oc_bn, 24);
}

// Beyond AutoTVM's rule: the fallback splits its reduction into L1-sized slices where the split
// is valid (several slices), and keeps it whole where one slice would hold every input channel.
TEST(ConfigSpace, DefaultConfigSplitsTheReductionWhereValid) {
  const ss::Task split = resnet_task(64, 56, 64, 3, 1, 1);  // 4 slices of 16 channels
  const auto split_space = *ss::make_config_space(split);
  const ss::Config c = ss::default_config(split, split_space);
  ASSERT_TRUE(split_space.is_valid(c));
  EXPECT_TRUE(ss::conv2d_nchwc_schedule(split_space, c).split_reduction);

  const ss::Task whole = resnet_task(64, 56, 128, 1, 2, 0);  // 1x1: one slice holds all 64
  const auto whole_space = *ss::make_config_space(whole);
  const ss::Config d = ss::default_config(whole, whole_space);
  ASSERT_TRUE(whole_space.is_valid(d));
  EXPECT_FALSE(ss::conv2d_nchwc_schedule(whole_space, d).split_reduction);
}

}  // namespace
