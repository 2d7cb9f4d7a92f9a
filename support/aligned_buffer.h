#pragma once
/// \file
/// A 64-byte aligned float buffer: kernels run on cache-line aligned data, so timings do not
/// depend on where malloc happened to place a vector.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace tensortune {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(int64_t count) : size_(count) {
    const size_t bytes = ((static_cast<size_t>(count) * sizeof(float) + 63) / 64) * 64;
    data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes > 0 ? bytes : 64)));
  }
  explicit AlignedBuffer(const std::vector<float>& v)
      : AlignedBuffer(static_cast<int64_t>(v.size())) {
    if (!v.empty()) std::memcpy(data_.get(), v.data(), v.size() * sizeof(float));
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }
  std::vector<float> to_vector() const {
    return std::vector<float>(data_.get(), data_.get() + size_);
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data_;
  int64_t size_ = 0;
};

}  // namespace tensortune
