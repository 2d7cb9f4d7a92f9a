// --input-shape's text: fixed shapes, a range of sequence lengths shared by several inputs, and
// what is refused (each error names the input and the text).
#include "workflow/input_shapes.h"

#include <gtest/gtest.h>

namespace tensortune::workflow {
namespace {

TEST(InputShapes, ARangeAxisHoldsItsTopAndInputsShareIt) {
  auto parsed = parse_input_shapes({"input_ids=1x1..512", "attention_mask=1x1..512", "x=2x3"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->shapes.at("input_ids"), (graph::Shape{1, 512}));
  EXPECT_EQ(parsed->shapes.at("x"), (graph::Shape{2, 3}));
  ASSERT_TRUE(parsed->range);
  EXPECT_EQ(parsed->range->lo, 1);
  EXPECT_EQ(parsed->range->hi, 512);
  ASSERT_EQ(parsed->range->inputs.size(), 2u);
  EXPECT_EQ(parsed->range->inputs[1], (graph::SequenceInput{"attention_mask", 1}));
  auto fixed = parse_input_shapes({"data=1x3x224x224"});
  ASSERT_TRUE(fixed);
  EXPECT_FALSE(fixed->range);
}

TEST(InputShapes, BadTextIsRefusedNamingTheInput) {
  const struct {
    std::vector<std::string> items;
    const char* words;
  } cases[] = {
      {{"ids=1x0"}, "--input-shape ids = '1x0': dimension 0 must be > 0"},
      {{"ids=1xa"}, "'a' is not a dimension"},
      {{"ids=1x8..8"}, "the range '8..8' is not LO..HI with LO < HI"},
      {{"ids=1..4x1..4"}, "one axis may be a range, not two"},
      {{"ids=1x1..8", "mask=1x1..16"}, "--input-shape mask: its range 1..16 is not the other"},
      // Found by fuzz_input_shape: a name given again would leave the range's axis stale.
      {{"k=1x1..512", "k=1x1512"}, "--input-shape k is given twice"},
      {{"=1x2"}, "is not NAME=AxBx..."},
      {{"ids="}, "--input-shape ids is empty"},
  };
  for (const auto& c : cases) {
    auto parsed = parse_input_shapes(c.items);
    ASSERT_FALSE(parsed) << c.items[0];
    EXPECT_NE(parsed.error().message.find(c.words), std::string::npos) << parsed.error().message;
  }
}

}  // namespace
}  // namespace tensortune::workflow
