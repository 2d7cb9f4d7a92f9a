#include "support/ndarray.h"

#include <random>

namespace tensortune {

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += "x";
    s += std::to_string(shape[i]);
  }
  return s;
}

void fill_uniform(NdArray& array, uint64_t seed, float lo, float hi) {
  // mt19937_64 output is specified by the standard, so the values are the same everywhere;
  // the distribution is our own arithmetic for the same reason.
  std::mt19937_64 gen(seed);
  const double scale = (static_cast<double>(hi) - lo) / 18446744073709551616.0;
  for (float& v : array.data) v = static_cast<float>(lo + static_cast<double>(gen()) * scale);
}

}  // namespace tensortune
