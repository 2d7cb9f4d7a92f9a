#pragma once
/// \file
/// The executor's thread pool. A network run is dozens of parallel steps back to back, each a
/// fraction of a millisecond, so waking sleeping workers through a condition variable for every
/// step would cost more than some steps take: workers spin on a generation counter (with the
/// CPU's pause hint) for up to a millisecond after their last job, then sleep until the next.
/// This is what TVM's runtime pool does as well.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tensortune::backend {

class SpinPool {
 public:
  /// `threads` >= 1 counts the calling thread.
  explicit SpinPool(int threads);
  ~SpinPool();
  SpinPool(const SpinPool&) = delete;
  SpinPool& operator=(const SpinPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs fn(t) for every t in [0, size()): the caller runs t = 0. Returns when all are done.
  void run(const std::function<void(int)>& fn);

 private:
  void worker(int index);

  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int)>* job_ = nullptr;
  std::mutex mu_;
  std::condition_variable wake_;
};

}  // namespace tensortune::backend
