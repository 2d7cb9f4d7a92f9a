#include "support/aligned_buffer.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tensortune {

void* allocate_aligned(size_t bytes) {
  if (bytes < kHugePageBytes) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    return std::aligned_alloc(64, rounded > 0 ? rounded : 64);
  }
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
#if defined(__linux__)
  // Advice only: where THP is off (or the kernel lacks it) the buffer keeps 4 KiB pages and
  // works the same, so the result is not checked.
  if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

AlignedBuffer AlignedBuffer::of(const Tensor& t) {
  if (is_float(t.dtype)) return AlignedBuffer(t.f32);
  const int width = element_size(t.dtype);
  const auto count = static_cast<int64_t>(t.i64.size());
  AlignedBuffer buffer((count * width + 3) / 4);
  auto* bytes = reinterpret_cast<char*>(buffer.data());
  for (int64_t i = 0; i < count; ++i) {
    const int64_t v = t.i64[i];
    std::memcpy(bytes + i * width, &v, static_cast<size_t>(width));  // little-endian
  }
  return buffer;
}

Tensor AlignedBuffer::read(DType dtype, const Shape& shape) const {
  Tensor t = Tensor::zeros(dtype, shape);
  if (is_float(dtype)) {
    std::memcpy(t.f32.data(), data(), t.f32.size() * sizeof(float));
    return t;
  }
  const int width = element_size(dtype);
  const auto* bytes = reinterpret_cast<const char*>(data());
  for (size_t i = 0; i < t.i64.size(); ++i) {
    int64_t v = 0;
    std::memcpy(&v, bytes + i * width, static_cast<size_t>(width));
    t.i64[i] = wrap_integer(dtype, v);  // sign-extends the narrow signed dtypes
  }
  return t;
}

}  // namespace tensortune
