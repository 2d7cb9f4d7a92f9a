#pragma once
/// \file
/// The machine's memory bandwidth as STREAM's triad measures it (a[i] = b[i] + s * c[i] over
/// arrays far beyond the last-level cache): the roof that memory-bound kernels (depthwise
/// convolutions, dense at batch 1, element-wise chains) are judged against.

#include <cstdint>

namespace tensortune {

struct TriadBandwidth {
  double best_gbs = 0, median_gbs = 0;
};

/// The triad on `threads` threads (each streams its contiguous share, first-touched by the
/// thread that later streams it), `passes` timed passes after one untimed, over three arrays
/// of `bytes_per_array` each; GB/s as STREAM counts them (3 floats per element, write-allocate
/// traffic not counted).
TriadBandwidth measure_triad_bandwidth(int threads, int64_t bytes_per_array, int passes);

}  // namespace tensortune
