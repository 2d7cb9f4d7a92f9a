#pragma once
/// \file
/// The one pool of worker threads for data-parallel kernels: the measurer times kernels under
/// it and the executor runs networks under it, so a kernel is timed the way it is deployed.
///
/// `run_on_all(fn)` runs fn(t) once on each of its threads (the caller is thread 0) and returns
/// when all are done; `parallel_for` splits [0, extent) evenly by t, the split every kernel
/// uses. The thread count is fixed at construction so that a measurement and its record name
/// the same count.
///
/// A network run is dozens of parallel steps back to back, each a fraction of a millisecond,
/// so waking sleeping workers through a condition variable for every step would cost more than
/// some steps take: workers spin on a generation counter (with the CPU's pause hint) for up to
/// a millisecond after their last job, then sleep until the next. TVM's runtime pool does the
/// same. Calls from several threads at once are serialised.
///
/// `parallel_for_sequence` goes one step further for a network's runs of short steps: the
/// workers are handed the whole run at once and move from one loop to the next through a
/// barrier among themselves, so the caller hands off (and a sleeping worker wakes) once per
/// run instead of once per step.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace tensortune {

/// One data-parallel loop: body(begin, end) over a slice of [0, extent).
struct ParallelLoop {
  int64_t extent = 0;
  std::function<void(int64_t, int64_t)> body;
};

class ThreadPool {
 public:
  /// `num_threads` >= 1 counts the calling thread: a pool of 1 starts no workers.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs fn(t) for t in [0, size()): the caller runs t = 0, worker k runs t = k.
  void run_on_all(const std::function<void(int)>& fn);

  /// Runs fn(begin, end) over [0, extent) split into size() even slices (thread t takes
  /// [extent * t / size(), extent * (t + 1) / size())); empty slices are skipped.
  void parallel_for(int64_t extent, const std::function<void(int64_t, int64_t)>& fn);

  /// Runs the loops in order, each split as parallel_for splits it, in one hand-off to the
  /// workers: every thread finishes its slice of loop i and waits at a barrier before any thread
  /// starts loop i + 1, so loop i + 1 sees everything loop i wrote. Same results as calling
  /// parallel_for for each loop in turn (same slices, same threads).
  void parallel_for_sequence(std::span<const ParallelLoop> loops);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex run_mu_;  ///< one job at a time
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int)>* job_ = nullptr;
  std::mutex sleep_mu_;
  std::condition_variable wake_;
};

}  // namespace tensortune
