#pragma once
/// \file
/// The statistics the benchmarks print: medians of repeated, alternating measurements (noisy
/// shared machines: a median resists the odd disturbed round that a mean would carry).
#include <algorithm>
#include <vector>

namespace tensortune::bench {

/// 0 for no values; the mean of the middle two for an even count.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace tensortune::bench
