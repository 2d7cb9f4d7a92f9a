#pragma once
/// \file
/// A conv2d_NCHWc config's register tile read off its entity, independently of the template's
/// own count: what the CPU-model tests compare the offer (and LLVM's spills) against.
#include <cstdint>
#include <variant>
#include <vector>

#include "schedule_space/config_space.h"

namespace tensortune::testing {

struct Conv2dRegisterTile {
  int64_t accumulators;  ///< rows x columns x vectors
  int64_t registers;     ///< those, the broadcast input, and the weights where columns share them
};

inline Conv2dRegisterTile conv2d_register_tile(const schedule_space::ConfigSpace& s,
                                               const schedule_space::Config& c, int lanes) {
  const auto inner = [&](const char* knob) {
    return std::get<std::vector<int64_t>>(s.value(c, knob)).back();
  };
  const int64_t vectors = (inner("tile_oc") + lanes - 1) / lanes;
  const int64_t columns = std::get<int64_t>(s.value(c, "tile_oh")) * inner("tile_ow");
  const int64_t acc = columns * vectors;
  return {acc, acc + (columns > 1 ? vectors : 0) + 1};
}

}  // namespace tensortune::testing
