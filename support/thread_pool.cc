#include "support/thread_pool.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TT_PAUSE() _mm_pause()
#else
#define TT_PAUSE() std::this_thread::yield()
#endif

namespace tensortune {

namespace {
constexpr auto kSpin = std::chrono::milliseconds(1);

/// A barrier for the pool's threads, all of which are running (they spin, never sleep): the
/// last to arrive opens the next phase. Its release of `phase_` publishes every thread's writes
/// before the barrier (each arrival is a release on `arrived_`, read by the last one's
/// acquire-release increment) to every thread that leaves it.
class SpinBarrier {
 public:
  explicit SpinBarrier(int count) : count_(count) {}
  void arrive_and_wait() {
    // Read before arriving: the phase cannot move on until this thread has arrived.
    const uint64_t phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_) {
      arrived_.store(0, std::memory_order_relaxed);
      phase_.fetch_add(1, std::memory_order_release);
      return;
    }
    while (phase_.load(std::memory_order_acquire) == phase) TT_PAUSE();
  }

 private:
  const int count_;
  std::atomic<int> arrived_{0};
  std::atomic<uint64_t> phase_{0};
};

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  { std::lock_guard<std::mutex> lock(sleep_mu_); }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  if (workers_.empty()) {
    fn(0);
    return;
  }
  std::lock_guard<std::mutex> one_job(run_mu_);
  job_ = &fn;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  {
    // Taken after the increment: a worker deciding to sleep holds the lock from its last
    // check to its wait, so it either sees the new generation or gets this notification.
    std::lock_guard<std::mutex> lock(sleep_mu_);
  }
  wake_.notify_all();
  fn(0);
  while (pending_.load(std::memory_order_acquire) != 0) TT_PAUSE();
}

void ThreadPool::parallel_for(int64_t extent, const std::function<void(int64_t, int64_t)>& fn) {
  const int threads = size();
  if (threads == 1 || extent <= 1) {
    if (extent > 0) fn(0, extent);
    return;
  }
  run_on_all([&](int t) {
    const int64_t b = extent * t / threads, e = extent * (t + 1) / threads;
    if (b < e) fn(b, e);
  });
}

void ThreadPool::parallel_for_sequence(std::span<const ParallelLoop> loops) {
  const int threads = size();
  if (threads == 1 || loops.size() == 1) {
    for (const ParallelLoop& loop : loops) parallel_for(loop.extent, loop.body);
    return;
  }
  SpinBarrier barrier(threads);
  run_on_all([&](int t) {
    for (size_t i = 0; i < loops.size(); ++i) {
      const ParallelLoop& loop = loops[i];
      // parallel_for's split; a loop of one iteration runs on the caller, as there.
      const int64_t b = loop.extent <= 1 ? (t == 0 ? 0 : loop.extent) : loop.extent * t / threads;
      const int64_t e = loop.extent <= 1 ? loop.extent : loop.extent * (t + 1) / threads;
      if (b < e) loop.body(b, e);
      if (i + 1 < loops.size()) barrier.arrive_and_wait();
    }
  });
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  while (true) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen &&
           !stop_.load(std::memory_order_acquire)) {
      TT_PAUSE();
      if (++spins % 1024 == 0 && std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(sleep_mu_);
        wake_.wait(lock, [&] {
          return generation_.load(std::memory_order_acquire) != seen ||
                 stop_.load(std::memory_order_acquire);
        });
      }
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    (*job_)(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace tensortune
