#pragma once
/// \file
/// The measured compute peak of this CPU, for "% of peak" columns: a loop of independent
/// vector multiply-adds (float32 FMA, or uint8 x int8 dot products with VNNI) on each of
/// `threads` threads, as wide as the CPU goes (512-bit with AVX-512, else 256-bit). Enough
/// independent accumulators that the loop is bound by the FMA pipes, not by their latency, so
/// the figure is what the pipes do, not what a clock-times-width formula promises. The fastest
/// of several rounds counts; a caller that measures again later and keeps the larger is safer
/// still on a shared machine.

namespace tensortune {

struct Peak {
  double gflops = 0;  ///< operations (a multiply-add counts two) per second, in 1e9
  int vector_bits = 0;
  bool amx_tiles = false;  ///< measured on AMX's tile unit, not on vectors
};

/// float32 FMAs on `threads` threads (each pinned to nothing; the OS spreads them).
Peak measured_fma_peak(int threads);
/// uint8 x int8 -> int32 dot products: on AMX's tile unit (tdpbusd) where the CPU has it and
/// Linux lets this process use it, else vpdpbusd where the CPU has AVX-512 VNNI or AVX-VNNI;
/// gflops 0 where it has none of them.
Peak measured_int8_peak(int threads);

/// How many independent multiply-add chains one core needs to keep its FMA pipes busy: the
/// latency of one FMA divided by the time between two FMAs at full throughput, i.e. latency x
/// pipes (8 on a core with two 512-bit pipes of four cycles; 4 where 512-bit FMAs go through
/// 256-bit pipes twice, as on Zen 4). A ratio of two timings taken on the same core moments
/// apart, so it needs no clock frequency and is what the hardware does whatever its model name
/// says. A few milliseconds.
struct FmaChains {
  int chains = 0;          ///< the nearest of 3, 4, 5, 6, 8, 10, 12; 0 when the CPU has no FMA
  double ratio = 0;        ///< as measured
  double peak_gflops = 0;  ///< one core, from the throughput loop
  int vector_bits = 0;
};
FmaChains probe_fma_chains();

}  // namespace tensortune
