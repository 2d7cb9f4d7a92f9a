#pragma once
/// \file
/// The oneDNN anchor of the benchmarks: conv2d in the layouts oneDNN chooses (nChw16c with
/// AVX-512, nChw8c with AVX2, weights blocked to match) and dense as an inner product; quantized
/// workloads as uint8 x int8 -> int32 in the layouts oneDNN picks, timed with our time_evaluator so
/// both sides run under the same protocol on the same number of threads (oneDNN's OpenMP
/// threads).

#include "compiler/measure/time_evaluator.h"
#include "schedule_space/workload.h"

namespace tensortune::bench {

struct AnchorResult {
  double seconds = 0;  ///< mean of the kept rounds
  double gflops = 0;
  std::string impl;  ///< oneDNN's implementation name (e.g. jit:avx512_core)
};

/// How an anchor is timed: our time_evaluator protocol on `threads` OpenMP threads; with
/// `flush_cache`, before every round the caches and TLB are evicted and the weights and output
/// flushed (as our measurer's flush_cache does for our kernels: the state a network runs a
/// layer in).
struct AnchorOptions {
  measure::TimeEvaluatorOptions timing;
  int threads = 1;
  bool flush_cache = false;
};

/// `winograd`: oneDNN's Winograd algorithm (convolution_winograd) where its implementations take
/// the shape on this CPU, else its direct algorithm; `impl` says which ran ("... wino ..." or
/// the direct one with " (no Winograd here)" added).
AnchorResult onednn_conv2d(const schedule_space::Conv2dWorkload& w, const AnchorOptions& options,
                           bool winograd = false);
AnchorResult onednn_dense(const schedule_space::DenseWorkload& w, const AnchorOptions& options);

}  // namespace tensortune::bench
