#include "support/work_queue.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace tensortune {

void for_each_item(size_t count, int threads, const std::function<void(size_t)>& item) {
  std::atomic<size_t> next{0};
  auto take = [&] {
    for (size_t i = next++; i < count; i = next++) item(i);
  };
  const size_t n = std::min<size_t>(count, static_cast<size_t>(std::max(threads, 1)));
  std::vector<std::thread> workers;
  for (size_t t = 1; t < n; ++t) workers.emplace_back(take);
  take();
  for (std::thread& w : workers) w.join();
}

}  // namespace tensortune
