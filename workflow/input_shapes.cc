// Implements input_shapes.h.
#include "workflow/input_shapes.h"

#include <algorithm>
#include <charconv>

namespace tensortune::workflow {

namespace {

Expected<int64_t> parse_dimension(std::string_view text, const std::string& field,
                                  const std::string& whole) {
  int64_t v = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    return invalid_argument(field + " = '" + whole + "': '" + std::string(text) +
                            "' is not a dimension");
  if (v <= 0)
    return invalid_argument(field + " = '" + whole + "': dimension " + std::to_string(v) +
                            " must be > 0");
  return v;
}

}  // namespace

Expected<InputShapes> parse_input_shapes(const std::vector<std::string>& items) {
  InputShapes parsed;
  for (const auto& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid_argument("--input-shape = '" + item +
                              "' is not NAME=AxBx... (or a range "
                              "of sequence lengths: NAME=1xLO..HI)");
    const std::string name = item.substr(0, eq), dims = item.substr(eq + 1);
    const std::string field = "--input-shape " + name;
    if (dims.empty()) return invalid_argument(field + " is empty");
    if (parsed.shapes.count(name))
      return invalid_argument(field + " is given twice (" + item + " after another)");
    graph::Shape shape;
    std::optional<graph::SequenceRange> range;
    size_t begin = 0;
    while (true) {
      const size_t end = std::min(dims.find('x', begin), dims.size());
      const std::string_view token = std::string_view(dims).substr(begin, end - begin);
      if (const size_t dots = token.find(".."); dots != std::string_view::npos) {
        if (range)
          return invalid_argument(field + " = '" + dims + "': one axis may be a range, not two");
        TT_ASSIGN_OR_RETURN(int64_t lo, parse_dimension(token.substr(0, dots), field, dims));
        TT_ASSIGN_OR_RETURN(int64_t hi, parse_dimension(token.substr(dots + 2), field, dims));
        if (hi <= lo)
          return invalid_argument(field + " = '" + dims + "': the range '" + std::string(token) +
                                  "' is not LO..HI with LO < HI");
        range = graph::SequenceRange{lo, hi, {{name, static_cast<int>(shape.size())}}};
        shape.push_back(hi);
      } else {
        TT_ASSIGN_OR_RETURN(int64_t d, parse_dimension(token, field, dims));
        shape.push_back(d);
      }
      if (end == dims.size()) break;
      begin = end + 1;
    }
    parsed.shapes[name] = shape;
    if (!range) continue;
    if (!parsed.range) {
      parsed.range = range;
    } else if (parsed.range->lo != range->lo || parsed.range->hi != range->hi) {
      return invalid_argument(
          field + ": its range " + std::to_string(range->lo) + ".." + std::to_string(range->hi) +
          " is not the other inputs' " + std::to_string(parsed.range->lo) + ".." +
          std::to_string(parsed.range->hi) + " (the ranged axes are one sequence length)");
    } else {
      parsed.range->inputs.push_back(range->inputs[0]);
    }
  }
  return parsed;
}

}  // namespace tensortune::workflow
