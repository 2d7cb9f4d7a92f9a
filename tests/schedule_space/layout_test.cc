// Layout transforms place each element where the layout's formula says.
#include "schedule_space/layout.h"

#include <gtest/gtest.h>

namespace tt = tensortune;
using tt::Tensor;

TEST(Layout, NchwcElementPlacementAndRoundTrip) {
  Tensor a = Tensor::zeros({2, 6, 3, 4});
  for (int64_t i = 0; i < a.size(); ++i) a.f32[i] = static_cast<float>(i);
  Tensor p = tt::schedule_space::pack_nchwc(a, 3);
  ASSERT_EQ(p.shape, (std::vector<int64_t>{2, 2, 3, 4, 3}));
  // (n=1, c=4, h=2, w=3) lives at [1, 4/3=1, 2, 3, 4%3=1].
  const float want = a.f32[((1 * 6 + 4) * 3 + 2) * 4 + 3];
  EXPECT_EQ(p.f32[(((1 * 2 + 1) * 3 + 2) * 4 + 3) * 3 + 1], want);
  EXPECT_EQ(tt::schedule_space::unpack_nchwc(p).f32, a.f32);
}

TEST(Layout, KernelPackingOihwio) {
  Tensor k = Tensor::zeros({4, 6, 2, 3});
  for (int64_t i = 0; i < k.size(); ++i) k.f32[i] = static_cast<float>(i);
  Tensor p = tt::schedule_space::pack_oihwio(k, 3, 2);
  ASSERT_EQ(p.shape, (std::vector<int64_t>{2, 2, 2, 3, 3, 2}));
  // weight (o=3, i=5, kh=1, kw=2) lives at [3/2, 5/3, 1, 2, 5%3, 3%2].
  const int64_t at = (((((1 * 2 + 1) * 2 + 1) * 3 + 2) * 3 + 2) * 2 + 1);
  EXPECT_EQ(p.f32[at], k.f32[((3 * 6 + 5) * 2 + 1) * 3 + 2]);
}

TEST(Layout, DenseWeightPacking) {
  Tensor w = Tensor::zeros({6, 5});
  for (int64_t i = 0; i < w.size(); ++i) w.f32[i] = static_cast<float>(i);
  Tensor p = tt::schedule_space::pack_dense_weight(w, 3);
  ASSERT_EQ(p.shape, (std::vector<int64_t>{2, 5, 3}));
  EXPECT_EQ(p.f32[(1 * 5 + 4) * 3 + 1], w.f32[4 * 5 + 4]);  // n=4, k=4
}
