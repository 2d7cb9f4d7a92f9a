#pragma once
/// \file
/// Private to compiler/codegen/llvm: how the direct convolution emitters split a row of output
/// tiles into interior tiles (every tap reads inside the input: a runtime loop with no checks)
/// and border or tail tiles (emitted one by one at compile-time positions, their out-of-range
/// taps dropped at compile time).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "schedule_space/workload.h"

namespace tensortune::codegen::emit {

/// A class of output-column tiles: a runtime range of interior tiles or one border/tail tile.
struct ColumnClass {
  bool runtime = false;
  int64_t lo = 0, hi = 0;  ///< runtime: tile indices [lo, hi)
  int64_t tile = 0;        ///< constant: the tile index
  int64_t size = 0;        ///< columns in the tile
};

/// The classes of a row of tiles of `tile` output columns, left to right.
inline std::vector<ColumnClass> classify_columns(const schedule_space::Conv2dWorkload& w,
                                                 int64_t tile) {
  std::vector<ColumnClass> classes;
  const int64_t out = w.out_width();
  const int64_t count = (out + tile - 1) / tile;
  for (int64_t t = 0; t < count; ++t) {
    const int64_t size = std::min(tile, out - t * tile);
    const int64_t first = t * tile * w.stride_w - w.pad_left;
    const int64_t last =
        (t * tile + size - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w - w.pad_left;
    const bool interior = size == tile && first >= 0 && last <= w.in_width - 1;
    if (interior && !classes.empty() && classes.back().runtime && classes.back().hi == t) {
      classes.back().hi = t + 1;
    } else if (interior) {
      classes.push_back({true, t, t + 1, 0, size});
    } else {
      classes.push_back({false, 0, 0, t, size});
    }
  }
  return classes;
}

}  // namespace tensortune::codegen::emit
