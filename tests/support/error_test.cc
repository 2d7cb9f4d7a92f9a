#include "support/error.h"

#include <gtest/gtest.h>

namespace tt = tensortune;

namespace {
tt::Expected<int> parse_positive(int v) {
  if (v <= 0) return tt::invalid_argument("v = " + std::to_string(v) + ", must be > 0");
  return v;
}
tt::Expected<int> doubled(int v) {
  TT_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}
tt::Status check(int v) {
  TT_RETURN_IF_ERROR(parse_positive(v));
  return tt::ok_status();
}
}  // namespace

TEST(Expected, ValueAndErrorPropagate) {
  EXPECT_EQ(*doubled(4), 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "v = -1, must be > 0");
  EXPECT_EQ(bad.value_or(7), 7);
  EXPECT_TRUE(check(1).has_value());
  EXPECT_EQ(check(0).error().code, tt::ErrorCode::kInvalidArgument);
}
