#pragma once
// Test helper: whether this binary runs under a sanitizer (scripts/test.sh --sanitize). The
// interpreter-heavy model tests then run the same checks at a smaller input size: ASan and TSan
// slow the reference loops 10-20x, and what they look for (bad accesses, races) does not depend
// on 224x224 versus 64x64.

namespace tensortune::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

/// The input side of the zoo models in a model test: 224, or 64 under a sanitizer.
inline constexpr int kZooInputSize = kSanitized ? 64 : 224;

}  // namespace tensortune::testing
