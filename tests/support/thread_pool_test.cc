// The one thread pool: every index of a parallel loop runs exactly once, on the thread the
// even split assigns; workers that went to sleep wake for the next job; callers on several
// threads at once are serialised instead of overwriting each other's job.
#include "support/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "support/work_queue.h"

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

// Each loop reads what other threads wrote in the loop before it (a rotation), so a thread that
// started loop i + 1 before every thread finished loop i would read a stale value; the result
// must equal the sequential computation, and each loop must be split as parallel_for splits it.
TEST(ThreadPoolTest, ASequenceOfLoopsSeesEachLoopsWritesAndKeepsTheSplit) {
  constexpr int64_t kExtent = 1000;
  constexpr int kLoops = 300;
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    std::vector<std::vector<int64_t>> x(kLoops + 1, std::vector<int64_t>(kExtent, 0));
    for (int64_t i = 0; i < kExtent; ++i) x[0][static_cast<size_t>(i)] = i;
    std::mutex mu;
    std::vector<std::pair<int64_t, int64_t>> slices;
    std::vector<ParallelLoop> loops;
    for (int k = 0; k < kLoops; ++k)
      loops.push_back({kExtent, [&, k](int64_t b, int64_t e) {
                         const auto& in = x[static_cast<size_t>(k)];
                         auto& out = x[static_cast<size_t>(k) + 1];
                         for (int64_t i = b; i < e; ++i)
                           out[static_cast<size_t>(i)] =
                               in[static_cast<size_t>((i + 337) % kExtent)] + 1;
                         if (k == 0) {
                           std::lock_guard<std::mutex> lock(mu);
                           slices.emplace_back(b, e);
                         }
                       }});
    // A loop of one iteration and an empty one in the middle, as networks have.
    loops.insert(loops.begin() + 100, ParallelLoop{1, [](int64_t b, int64_t e) {
                                                     ASSERT_EQ(b, 0);
                                                     ASSERT_EQ(e, 1);
                                                   }});
    loops.insert(loops.begin() + 200,
                 ParallelLoop{0, [](int64_t, int64_t) { FAIL() << "an empty loop ran"; }});
    pool.parallel_for_sequence(loops);
    for (int64_t i = 0; i < kExtent; ++i)
      ASSERT_EQ(x[kLoops][static_cast<size_t>(i)], (i + 337 * kLoops) % kExtent + kLoops)
          << threads << " threads, index " << i;
    std::sort(slices.begin(), slices.end());
    ASSERT_EQ(slices.size(), static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t)
      EXPECT_EQ(slices[static_cast<size_t>(t)],
                std::make_pair(kExtent * t / threads, kExtent * (t + 1) / threads));
  }
}

TEST(ForEachItem, EveryItemRunsOnceOnAtMostTheThreadsAsked) {
  for (const auto& [count, threads] :
       std::vector<std::pair<size_t, int>>{{0, 4}, {1, 4}, {3, 8}, {100, 3}, {100, 0}}) {
    std::vector<std::atomic<int>> runs(count);
    std::mutex mu;
    std::set<std::thread::id> ids;
    for_each_item(count, threads, [&](size_t i) {
      ++runs[i];
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(runs[i].load(), 1) << "item " << i;
    EXPECT_LE(ids.size(), static_cast<size_t>(std::max(threads, 1)));
    if (count > 0) EXPECT_GE(ids.size(), 1u);
  }
}

}  // namespace
}  // namespace tensortune
