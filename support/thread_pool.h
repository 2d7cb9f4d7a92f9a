#pragma once
/// \file
/// A fixed-size pool of worker threads for data-parallel kernels. `run_on_all(fn)` runs fn(t)
/// once on each of its threads (the caller is thread 0) and returns when all are done; kernels
/// split their parallel loop by t. The thread count is fixed at construction so that a
/// measurement and its record name the same count.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tensortune {

class ThreadPool {
 public:
  /// `num_threads` >= 1 counts the calling thread: a pool of 1 starts no workers.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }

  /// Runs fn(t) for t in [0, num_threads): the caller runs t = 0, worker k runs t = k.
  void run_on_all(const std::function<void(int)>& fn);

 private:
  void worker_loop(int index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace tensortune
