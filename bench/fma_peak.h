#pragma once
/// \file
/// The measured compute peak of this CPU, for "% of peak" columns: a loop of independent
/// vector multiply-adds (float32 FMA, or uint8 x int8 dot products with VNNI) on each of
/// `threads` threads, as wide as the CPU goes (512-bit with AVX-512, else 256-bit). Enough
/// independent accumulators that the loop is bound by the FMA pipes, not by their latency, so
/// the figure is what the pipes do, not what a clock-times-width formula promises. The fastest
/// of several rounds counts; a caller that measures again later and keeps the larger is safer
/// still on a shared machine.

namespace tensortune::bench {

struct Peak {
  double gflops = 0;  ///< operations (a multiply-add counts two) per second, in 1e9
  int vector_bits = 0;
};

/// float32 FMAs on `threads` threads (each pinned to nothing; the OS spreads them).
Peak measured_fma_peak(int threads);
/// uint8 x int8 -> int32 dot products (vpdpbusd) where the CPU has AVX-512 VNNI or AVX-VNNI;
/// gflops 0 where it has neither.
Peak measured_int8_peak(int threads);

}  // namespace tensortune::bench
