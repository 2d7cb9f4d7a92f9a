// The one thread pool: every index of a parallel loop runs exactly once, on the thread the
// even split assigns; workers that went to sleep wake for the next job; callers on several
// threads at once are serialised instead of overwriting each other's job.
#include "support/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tensortune {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIndexOnceWithTheEvenSplit) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    ASSERT_EQ(pool.size(), threads);
    for (int64_t extent : {0, 1, 2, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(extent));
      std::vector<std::pair<int64_t, int64_t>> slices;
      std::mutex mu;
      pool.parallel_for(extent, [&](int64_t b, int64_t e) {
        ASSERT_LT(b, e);
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        std::lock_guard<std::mutex> lock(mu);
        slices.emplace_back(b, e);
      });
      for (int64_t i = 0; i < extent; ++i)
        EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " threads, index " << i;
      // Every slice is one of the split's [extent*t/threads, extent*(t+1)/threads).
      for (auto [b, e] : slices) {
        bool found = threads == 1 || extent <= 1;
        for (int t = 0; t < threads && !found; ++t)
          found = b == extent * t / threads && e == extent * (t + 1) / threads;
        EXPECT_TRUE(found) << "[" << b << ", " << e << ") with " << threads << " threads";
      }
    }
  }
}

TEST(ThreadPoolTest, RunOnAllRunsEachThreadIndexOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> seen(4);
  std::vector<std::thread::id> ids(4);
  pool.run_on_all([&](int t) {
    seen[static_cast<size_t>(t)]++;
    ids[static_cast<size_t>(t)] = std::this_thread::get_id();
  });
  for (int t = 0; t < 4; ++t) EXPECT_EQ(seen[static_cast<size_t>(t)].load(), 1);
  EXPECT_EQ(ids[0], std::this_thread::get_id()) << "the caller runs index 0";
  for (int t = 1; t < 4; ++t) EXPECT_NE(ids[static_cast<size_t>(t)], ids[0]);
}

TEST(ThreadPoolTest, WorkersThatFellAsleepWakeForTheNextJob) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    // Longer than the spin window, so the workers are asleep on the condition variable.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::atomic<int> ran{0};
    pool.run_on_all([&](int) { ran++; });
    EXPECT_EQ(ran.load(), 3) << "round " << round;
  }
}

TEST(ThreadPoolTest, CallersOnSeveralThreadsAreSerialised) {
  ThreadPool pool(3);
  constexpr int kCallers = 4, kJobs = 200;
  std::atomic<int> inside{0}, overlap{0};
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&] {
      for (int j = 0; j < kJobs; ++j)
        pool.parallel_for(30, [&](int64_t b, int64_t e) {
          if (inside.fetch_add(1) >= 3) overlap++;
          total += e - b;
          inside.fetch_sub(1);
        });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), int64_t{kCallers} * kJobs * 30);
  EXPECT_EQ(overlap.load(), 0) << "two jobs ran on the pool at once";
}

}  // namespace
}  // namespace tensortune
