#pragma once
/// \file
/// Items of uneven cost (compiling a batch of kernels, timing layout transforms) spread over a
/// few threads, each taking the next index as it finishes one. Unlike ThreadPool, which splits
/// a data-parallel loop evenly over long-lived workers, this starts its threads per call: the
/// items take milliseconds to seconds each, so starting threads costs nothing that shows.
#include <cstddef>
#include <functional>

namespace tensortune {

/// Runs item(i) for every i in [0, count) on min(threads, count) threads, the calling thread
/// one of them, and returns when all are done. item must be safe to call concurrently for
/// different i. threads < 1 counts as 1.
void for_each_item(size_t count, int threads, const std::function<void(size_t)>& item);

}  // namespace tensortune
