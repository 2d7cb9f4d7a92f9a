// Template facts: validity filters, dense spaces, feature vectors of fixed length.
#include <gtest/gtest.h>

#include <algorithm>

#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/dense_template.h"
#include "schedule_space/features.h"
#include "schedule_space/task.h"

namespace ss = tensortune::schedule_space;

TEST(Templates, ConvValidityBoundsTheRegisterTileAndSplitsOnlyWhatSplits) {
  ss::Conv2dWorkload w;
  w.in_channels = 64;
  w.in_height = w.in_width = 56;
  w.out_channels = 64;
  w.kernel_h = w.kernel_w = 3;
  w.pad_top = w.pad_left = w.pad_bottom = w.pad_right = 1;
  auto t = *ss::make_task(ss::kConv2dNCHWc, w, {"llvm", 16});
  auto space = *ss::make_config_space(t);
  int valid = 0;
  for (int64_t i = 0; i < space.size(); ++i) {
    auto c = *space.config_at(i);
    auto s = ss::conv2d_nchwc_schedule(space, c);
    const int64_t acc = s.reg_h * s.reg_n * ((s.oc_bn + 15) / 16);
    // A split reduction is a config of its own only where it makes two slices or more.
    const bool splits = ss::reduction_slice_chunks(w, s.ic_bn, s.oc_bn) < w.in_channels / s.ic_bn &&
                        4 * s.reg_h * w.out_width() * s.oc_bn <= ss::kPartialSumBytes;
    EXPECT_EQ(space.is_valid(c), acc <= ss::kMaxAccumulators && (!s.split_reduction || splits))
        << space.describe(c);
    valid += space.is_valid(c);
  }
  EXPECT_GT(valid, 500);
  EXPECT_TRUE(space.is_valid(ss::default_config(t, space)));
}

TEST(Templates, DenseSpacesAndDefaults) {
  ss::DenseWorkload d{1, 1000, 2048};
  auto pack = *ss::make_task(ss::kDensePack, d, {"llvm", 16});
  auto space = *ss::make_config_space(pack);
  // tile_y of 1: one entity; tile_x 3-way of 1000: 100; tile_k 2-way of 2048: 12.
  EXPECT_EQ(space.size(), 1 * 100 * 12);
  auto s = ss::dense_schedule(space, ss::default_config(pack, space), d, true);
  EXPECT_EQ(s.xi, 25);  // largest divisor of 1000 <= 32
  EXPECT_EQ(s.kf, 1);
  auto nopack = *ss::make_task(ss::kDenseNopack, d, {"llvm", 16});
  auto ns = *ss::make_config_space(nopack);
  EXPECT_EQ(ns.size(), 1 * 16 * 12);
  EXPECT_EQ(ss::dense_schedule(ns, ss::default_config(nopack, ns), d, false).kf, 32);
}

// A token matrix (BERT's 128 x 768 -> 768) defaults to rows x three vectors with the reduction
// unrolled by 4 where the registers hold it (32 of AVX-512), and to AutoTVM's two vectors
// where they do not (AVX2's 16) or where N is no multiple of three vectors.
TEST(Templates, DenseDefaultsToThreeVectorsOfColumnsWhereTheRegistersHoldThem) {
  auto default_on = [](const ss::DenseWorkload& d, const char* cpu, int lanes) {
    auto task =
        *ss::make_task(ss::kDensePack, d, {std::string("llvm -keys=cpu -mcpu=") + cpu, lanes});
    auto space = *ss::make_config_space(task);
    const ss::Config c = ss::default_config(task, space);
    EXPECT_TRUE(space.is_valid(c)) << cpu;
    return ss::dense_schedule(space, c, d, true);
  };
  const ss::DenseWorkload tokens{128, 768, 768};
  const auto wide = default_on(tokens, "znver4", 16);
  EXPECT_EQ(wide.yi, 8);
  EXPECT_EQ(wide.xi, 48);
  EXPECT_EQ(wide.kf, 4);
  EXPECT_EQ(wide.xo, 1);
  const auto avx2 = default_on(tokens, "znver3", 8);
  EXPECT_EQ(avx2.xi, 16);  // AutoTVM's: the largest divisor of 768 within 2 x 8 lanes
  EXPECT_EQ(avx2.kf, 1);
  const auto odd = default_on({128, 1000, 768}, "znver4", 16);
  EXPECT_EQ(odd.xi, 25);  // 1000 holds no 48: AutoTVM's largest divisor within 32
  EXPECT_EQ(odd.kf, 1);
}

TEST(Templates, FeaturesHaveFixedLength) {
  ss::DenseWorkload d{4, 64, 64};
  auto t = *ss::make_task(ss::kDensePack, d, {"llvm", 16});
  auto space = *ss::make_config_space(t);
  const size_t n = ss::feature_names(t.template_name).size();
  for (int64_t i = 0; i < space.size(); i += 7)
    EXPECT_EQ(ss::config_features(t, space, *space.config_at(i)).size(), n);
}

TEST(Templates, AlgorithmsAreExcludedByTheirRegisteredNames) {
  const auto names = ss::algorithm_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), ss::kDirectAlgorithm);
  // Every template's algorithm is listed once.
  for (const ss::Template* t : ss::all_templates())
    EXPECT_EQ(std::count(names.begin(), names.end(), t->algorithm()), 1) << t->name();

  ss::Conv2dWorkload w;
  w.in_channels = w.out_channels = 64;
  w.in_height = w.in_width = 56;
  w.kernel_h = w.kernel_w = 3;
  w.pad_top = w.pad_left = w.pad_bottom = w.pad_right = 1;
  const auto all = ss::templates_for(w, "llvm");
  for (std::string_view a : names) {
    if (a == ss::kDirectAlgorithm) continue;
    auto filter = ss::exclude_algorithms({std::string(a)}, "--exclude-algorithm");
    ASSERT_TRUE(filter.has_value()) << filter.error().message;
    const auto kept = ss::templates_for(w, "llvm", *filter);
    for (const ss::Template* t : kept) EXPECT_NE(t->algorithm(), a) << t->name();
    for (const ss::Template* t : all) {
      if (t->algorithm() != a) EXPECT_NE(std::find(kept.begin(), kept.end(), t), kept.end());
    }
  }

  auto unknown = ss::exclude_algorithms({"winogard"}, "--exclude-algorithm");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("--exclude-algorithm = 'winogard'"), std::string::npos);
  auto direct = ss::exclude_algorithms({std::string(ss::kDirectAlgorithm)}, "--exclude-algorithm");
  EXPECT_FALSE(direct.has_value()) << "every node needs the direct algorithm as its fallback";
}
