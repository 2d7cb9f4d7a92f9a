// --input-shape's text (compile, tune, tasks, ...): fixed shapes and ranges of sequence lengths.
// Lines of the input are the repeated flag's values.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "workflow/input_shapes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> items;
  for (std::string line; std::getline(in, line);) items.push_back(line);
  auto parsed = tensortune::workflow::parse_input_shapes(items);
  if (parsed && parsed->range)
    for (const auto& input : parsed->range->inputs)
      if (parsed->shapes.at(input.name).at(static_cast<size_t>(input.axis)) != parsed->range->hi)
        __builtin_trap();  // the ranged axis holds the range's top
  return 0;
}
