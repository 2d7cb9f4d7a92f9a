#pragma once
/// \file
/// A 64-byte aligned float buffer: kernels run on cache-line aligned data, so timings do not
/// depend on where malloc happened to place a vector.
///
/// Buffers of 2 MiB or more are aligned to 2 MiB and, on Linux, advised to be backed by
/// transparent huge pages. A network streams all of its weights every run (ResNet-50: 100 MB),
/// and with 4 KiB pages every page of a layer's weights misses the TLB: a 7x7x512 Winograd
/// layer's 16.8 MB are 4,100 page walks per call. With 2 MiB pages ResNet-50 runs about 5%
/// faster on one core (docs/winograd.md). Machines whose THP setting is "never" ignore the
/// advice; "madvise", the common default, honours it.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "support/tensor.h"

namespace tensortune {

/// Bytes from which an AlignedBuffer asks for huge pages.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/// Allocates `bytes` (rounded up) aligned to 64 bytes, or to kHugePageBytes with huge pages
/// advised when bytes >= kHugePageBytes; free with std::free. Null when out of memory.
void* allocate_aligned(size_t bytes);

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(int64_t count)
      : data_(static_cast<float*>(allocate_aligned(static_cast<size_t>(count) * sizeof(float)))),
        size_(count) {}
  explicit AlignedBuffer(const std::vector<float>& v)
      : AlignedBuffer(static_cast<int64_t>(v.size())) {
    if (!v.empty()) std::memcpy(data_.get(), v.data(), v.size() * sizeof(float));
  }
  /// A tensor's elements as a generated kernel reads them: float dtypes as float32, integer
  /// dtypes at their own width (uint8 and int8 one byte each, int32 four), packed from the
  /// start of a buffer of whole floats.
  static AlignedBuffer of(const Tensor& t);
  /// The first `shape`'s count of elements of `dtype` read back (the inverse of of()).
  Tensor read(DType dtype, const Shape& shape) const;

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
