// AlignedBuffer: cache-line alignment for every buffer, huge-page alignment for large ones, and
// every element usable (ASan checks the bounds in the sanitizer stage).
#include "support/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace tensortune {
namespace {

uintptr_t address(const AlignedBuffer& b) { return reinterpret_cast<uintptr_t>(b.data()); }

TEST(AlignedBufferTest, SmallBuffersAreCacheLineAlignedAndEmptyOnesAreNotNull) {
  for (int64_t count : {0, 1, 15, 16, 17, 1000}) {
    AlignedBuffer b(count);
    ASSERT_NE(b.data(), nullptr) << count;
    EXPECT_EQ(address(b) % 64, 0u) << count;
    EXPECT_EQ(b.size(), count);
  }
}

TEST(AlignedBufferTest, LargeBuffersAreHugePageAlignedAndHoldEveryElement) {
  const int64_t just_huge = static_cast<int64_t>(kHugePageBytes / sizeof(float));
  for (int64_t count : {just_huge - 1, just_huge, just_huge + 1, 3 * just_huge + 5}) {
    std::vector<float> values(static_cast<size_t>(count));
    std::iota(values.begin(), values.end(), 0.0f);
    AlignedBuffer b(values);
    ASSERT_NE(b.data(), nullptr);
    const bool huge = static_cast<size_t>(count) * sizeof(float) >= kHugePageBytes;
    EXPECT_EQ(address(b) % (huge ? kHugePageBytes : 64), 0u) << count;
    b.data()[count - 1] += 1.0f;  // the last element is writable
    values.back() += 1.0f;
    EXPECT_EQ(b.to_vector(), values) << count;
  }
}

}  // namespace
}  // namespace tensortune
