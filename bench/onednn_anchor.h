#pragma once
/// \file
/// The oneDNN anchor of the benchmarks: conv2d in nChw16c (weights in oneDNN's own blocked
/// layout, its choice) and dense as an inner product, timed with our time_evaluator so both
/// sides run under the same protocol on one thread.

#include "compiler/measure/time_evaluator.h"
#include "schedule_space/workload.h"

namespace tensortune::bench {

struct AnchorResult {
  double seconds = 0;  ///< mean of the kept rounds
  double gflops = 0;
  std::string impl;  ///< oneDNN's implementation name (e.g. jit:avx512_core)
};

/// `winograd`: oneDNN's Winograd algorithm (convolution_winograd) where its implementations take
/// the shape on this CPU, else its direct algorithm; `impl` says which ran ("... wino ..." or
/// the direct one with " (no Winograd here)" added).
AnchorResult onednn_conv2d(const schedule_space::Conv2dWorkload& w,
                           const measure::TimeEvaluatorOptions& timing, bool winograd = false);
AnchorResult onednn_dense(const schedule_space::DenseWorkload& w,
                          const measure::TimeEvaluatorOptions& timing);

}  // namespace tensortune::bench
