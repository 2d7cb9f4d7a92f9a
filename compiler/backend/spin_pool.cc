#include "compiler/backend/spin_pool.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TT_PAUSE() _mm_pause()
#else
#define TT_PAUSE() std::this_thread::yield()
#endif

namespace tensortune::backend {

namespace {
constexpr auto kSpin = std::chrono::milliseconds(1);
}

SpinPool::SpinPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

SpinPool::~SpinPool() {
  stop_.store(true, std::memory_order_release);
  { std::lock_guard<std::mutex> lock(mu_); }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void SpinPool::run(const std::function<void(int)>& fn) {
  if (workers_.empty()) {
    fn(0);
    return;
  }
  job_ = &fn;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  {
    // Taken after the increment: a worker deciding to sleep holds the lock from its last
    // check to its wait, so it either sees the new generation or gets this notification.
    std::lock_guard<std::mutex> lock(mu_);
  }
  wake_.notify_all();
  fn(0);
  while (pending_.load(std::memory_order_acquire) != 0) TT_PAUSE();
}

void SpinPool::worker(int index) {
  uint64_t seen = 0;
  while (true) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen &&
           !stop_.load(std::memory_order_acquire)) {
      TT_PAUSE();
      if (++spins % 1024 == 0 && std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(mu_);
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

}  // namespace tensortune::backend
