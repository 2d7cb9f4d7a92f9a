// float16 and bfloat16 conversions against brute force: every one of the 65,536 bit patterns
// converts exactly, and a float32 rounds to the nearest value of the format found by search,
// ties to the even pattern.
#include "support/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tt = tensortune;

namespace {

struct Format {
  const char* name;
  uint16_t (*to_bits)(float);
  float (*from_bits)(uint16_t);
};

const Format kFormats[] = {{"float16", tt::float_to_half_bits, tt::half_bits_to_float},
                           {"bfloat16", tt::float_to_bfloat16_bits, tt::bfloat16_bits_to_float}};

// The format's finite non-negative values in increasing order, with their patterns (0 first;
// the patterns of non-negative numbers increase with their values in both formats).
std::vector<std::pair<double, uint16_t>> positive_grid(const Format& f) {
  std::vector<std::pair<double, uint16_t>> grid;
  for (uint32_t b = 0; b < 0x8000; ++b) {
    const float v = f.from_bits(static_cast<uint16_t>(b));
    if (std::isfinite(v)) grid.push_back({v, static_cast<uint16_t>(b)});
  }
  return grid;
}

// Brute force: the nearest grid value to |v|, ties to the even pattern; beyond the largest
// finite value by half an ulp or more: infinity (IEEE's rule for round to nearest).
uint16_t nearest(const std::vector<std::pair<double, uint16_t>>& grid, float v, uint16_t inf) {
  const double a = std::fabs(static_cast<double>(v));
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double top = grid.back().first, ulp = top - grid[grid.size() - 2].first;
  if (a >= top + ulp / 2) return sign | inf;
  auto hi = std::lower_bound(grid.begin(), grid.end(), std::make_pair(a, uint16_t{0}));
  if (hi == grid.end()) return sign | grid.back().second;
  if (hi->first == a || hi == grid.begin()) return sign | hi->second;
  auto lo = hi - 1;
  const double dlo = a - lo->first, dhi = hi->first - a;
  if (dlo < dhi) return sign | lo->second;
  if (dhi < dlo) return sign | hi->second;
  return sign | ((lo->second & 1) == 0 ? lo->second : hi->second);
}

TEST(Float16, EveryBitPatternConvertsToFloatAndBackExactly) {
  for (const Format& f : kFormats) {
    for (uint32_t b = 0; b <= 0xffff; ++b) {
      const float v = f.from_bits(static_cast<uint16_t>(b));
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(f.from_bits(f.to_bits(v)))) << f.name << " " << b;
        continue;
      }
      ASSERT_EQ(f.to_bits(v), b) << f.name << " pattern " << b << " = " << v;
    }
  }
  // Known values: 1, -2, the largest finite, the smallest subnormal.
  EXPECT_EQ(tt::half_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(tt::half_bits_to_float(0xc000), -2.0f);
  EXPECT_EQ(tt::half_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(tt::half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(tt::bfloat16_bits_to_float(0x3f80), 1.0f);
}

TEST(Float16, Float32RoundsToTheNearestValueTiesToEven) {
  for (const Format& f : kFormats) {
    const auto grid = positive_grid(f);
    const uint16_t inf = f.to_bits(std::numeric_limits<float>::infinity());
    std::mt19937 rng(7);
    std::vector<float> cases;
    // Random bit patterns over the whole float32 range, plus every midpoint of the format's
    // grid and its neighbours (the ties and the values just beside them).
    for (int i = 0; i < 200000; ++i) {
      uint32_t bits = rng();
      float v;
      std::memcpy(&v, &bits, 4);
      if (!std::isnan(v)) cases.push_back(v);
    }
    for (size_t i = 0; i + 1 < grid.size(); i += 7) {
      const float mid = static_cast<float>((grid[i].first + grid[i + 1].first) / 2);
      for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
        cases.push_back(v);
        cases.push_back(-v);
      }
    }
    const float top = static_cast<float>(grid.back().first);
    for (float v :
         {0.0f, -0.0f, top, std::nextafter(top, 1e30f), 1e30f,
          std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min()})
      cases.push_back(v);
    for (float v : cases) ASSERT_EQ(f.to_bits(v), nearest(grid, v, inf)) << f.name << " of " << v;
  }
}

}  // namespace
