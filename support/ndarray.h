#pragma once
/// \file
/// A dense float32 array with a shape: the value type that crosses module boundaries for
/// operator inputs and outputs (numpy's C order, row-major, last axis fastest).

#include <cstdint>
#include <string>
#include <vector>

namespace tensortune {

struct NdArray {
  std::vector<int64_t> shape;
  std::vector<float> data;

  NdArray() = default;
  explicit NdArray(std::vector<int64_t> s) : shape(std::move(s)), data(num_elements(shape), 0.0f) {}

  static int64_t num_elements(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

/// "1x64x56x56".
std::string shape_to_string(const std::vector<int64_t>& shape);

/// Fills with uniform values in [lo, hi) from a fixed-seed generator (deterministic across runs).
void fill_uniform(NdArray& array, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace tensortune
