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
  AlignedBuffer buffer((t.size() * buffer_element_size(t.dtype) + 3) / 4);
  write_buffer(t, buffer.data());
  return buffer;
}

Tensor AlignedBuffer::read(DType dtype, const Shape& shape) const {
  return read_buffer({dtype, shape}, data());
}

}  // namespace tensortune
