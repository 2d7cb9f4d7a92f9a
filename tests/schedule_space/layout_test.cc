// Layout transforms place each element where the layout's formula says.
#include "schedule_space/layout.h"

#include <gtest/gtest.h>

namespace tt = tensortune;
using tt::NdArray;

TEST(Layout, NchwcElementPlacementAndRoundTrip) {
  NdArray a({2, 6, 3, 4});
  for (int64_t i = 0; i < a.size(); ++i) a.data[i] = static_cast<float>(i);
  NdArray p = tt::schedule_space::pack_nchwc(a, 3);
  ASSERT_EQ(p.shape, (std::vector<int64_t>{2, 2, 3, 4, 3}));
  // (n=1, c=4, h=2, w=3) lives at [1, 4/3=1, 2, 3, 4%3=1].
  const float want = a.data[((1 * 6 + 4) * 3 + 2) * 4 + 3];
  EXPECT_EQ(p.data[(((1 * 2 + 1) * 3 + 2) * 4 + 3) * 3 + 1], want);
  EXPECT_EQ(tt::schedule_space::unpack_nchwc(p).data, a.data);
}

TEST(Layout, KernelPackingOihwio) {
  NdArray k({4, 6, 2, 3});
  for (int64_t i = 0; i < k.size(); ++i) k.data[i] = static_cast<float>(i);
  NdArray p = tt::schedule_space::pack_oihwio(k, 3, 2);
  ASSERT_EQ(p.shape, (std::vector<int64_t>{2, 2, 2, 3, 3, 2}));
  // weight (o=3, i=5, kh=1, kw=2) lives at [3/2, 5/3, 1, 2, 5%3, 3%2].
  const int64_t at = (((((1 * 2 + 1) * 2 + 1) * 3 + 2) * 3 + 2) * 2 + 1);
  EXPECT_EQ(p.data[at], k.data[((3 * 6 + 5) * 2 + 1) * 3 + 2]);
}

TEST(Layout, DenseWeightPacking) {
  NdArray w({6, 5});
  for (int64_t i = 0; i < w.size(); ++i) w.data[i] = static_cast<float>(i);
  NdArray p = tt::schedule_space::pack_dense_weight(w, 3);
  ASSERT_EQ(p.shape, (std::vector<int64_t>{2, 5, 3}));
  EXPECT_EQ(p.data[(1 * 5 + 4) * 3 + 1], w.data[4 * 5 + 4]);  // n=4, k=4
}
