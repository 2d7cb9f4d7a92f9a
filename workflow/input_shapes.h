#pragma once
/// \file
/// --input-shape's text: NAME=1x3x224x224 fixes an input's shape; NAME=1x1..512 makes one axis
/// a range of sequence lengths (the inputs given the same range share the length: BERT's token
/// ids and attention mask). Parsed with no library behind it but support/, so that the fuzzers
/// take it alone.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/graph/sequence_range.h"
#include "support/error.h"

namespace tensortune::workflow {

struct InputShapes {
  /// Each named input's shape; a ranged axis holds the range's top.
  std::map<std::string, graph::Shape> shapes;
  std::optional<graph::SequenceRange> range;
};

/// kInvalidArgument naming the item and the text that is not a dimension, an input given twice,
/// a range that is not 1 <= LO < HI, two ranges on one input, or ranges that differ between
/// inputs.
Expected<InputShapes> parse_input_shapes(const std::vector<std::string>& items);

}  // namespace tensortune::workflow
