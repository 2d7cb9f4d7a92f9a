// The archive's batched writer: a result reaches its job only after the transaction holding it
// committed (another connection can read it by then), in the order the results came, and
// stopping commits what is queued.
#include "tracker/archive_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "schedule_space/task.h"
#include "tests/support/test_paths.h"

namespace tensortune::tracker {
namespace {

namespace ss = schedule_space;

TEST(ArchiveWriter, AResultIsHandedOnOnlyOnceItsBatchCommittedAndInOrder) {
  const std::string path = testing::fresh_db_path("archive_writer");
  auto archive = Archive::open(path);
  ASSERT_TRUE(archive) << archive.error().message;
  ss::DenseWorkload w;
  w.batch = 1;
  w.in_features = 64;
  w.out_features = 32;
  auto task = ss::make_task("dense_pack.x86", w, ss::Target{});
  ASSERT_TRUE(task) << task.error().message;
  auto space = std::make_shared<const ss::ConfigSpace>(*ss::make_config_space(*task));
  auto task_id = (*archive)->task_id(*task, *space);
  ASSERT_TRUE(task_id);

  // A second connection, as a client (or a restarted tracker) would read the archive.
  auto reader = records::RecordStore::open(path);
  ASSERT_TRUE(reader);
  constexpr int kResults = 3000;  // more than one batch
  std::vector<int> added, handed;
  std::vector<std::pair<int64_t, int64_t>> checks;  // (handed so far, committed then)
  std::mutex mu, add_mu;
  {
    ArchiveWriter writer(**archive, nullptr);
    std::vector<std::thread> producers;
    std::atomic<int> next{0};
    // Four threads add results at once, as device streams complete items.
    for (int t = 0; t < 4; ++t)
      producers.emplace_back([&] {
        for (int i; (i = next.fetch_add(1)) < kResults;) {
          ArchiveWriter::Entry e;
          ss::MeasureResult r;
          r.config_index = i % space->size();
          r.costs = {1e-3 + 1e-9 * i};
          r.device_key = "k";
          e.row = Archive::Row{*task_id, space, *space->config_at(r.config_index), r,
                               records::RunInfo{"farm", "job", "", "dev"}};
          e.index = i;
          e.then = [&, i] {
            std::lock_guard<std::mutex> lock(mu);
            handed.push_back(i);
            // Reading on every hand-over is slow; every 250th is enough to catch an early one.
            if (i % 250 == 0)
              checks.emplace_back(static_cast<int64_t>(handed.size()), *(*reader)->result_count());
          };
          std::lock_guard<std::mutex> lock(add_mu);  // the order of adding, to compare
          added.push_back(i);
          writer.add(std::move(e));
        }
      });
    for (auto& p : producers) p.join();
  }  // the destructor commits the rest
  ASSERT_EQ(handed.size(), static_cast<size_t>(kResults));
  EXPECT_EQ(*(*reader)->result_count(), kResults);
  EXPECT_EQ(handed, added);  // in the order they came
  // Whenever a result was handed over, every result handed over so far was committed.
  ASSERT_FALSE(checks.empty());
  for (const auto& [so_far, committed] : checks) EXPECT_GE(committed, so_far);
}

TEST(ArchiveWriter, EntriesWithoutARowAreHandedOnInOrder) {
  auto archive = Archive::open(testing::fresh_db_path("archive_writer_plain"));
  ASSERT_TRUE(archive);
  std::vector<int> order;
  {
    ArchiveWriter writer(**archive, nullptr);
    for (int i = 0; i < 100; ++i) {
      ArchiveWriter::Entry e;
      e.then = [&order, i] { order.push_back(i); };
      writer.add(std::move(e));
    }
    writer.stop();
    writer.stop();  // idempotent
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

}  // namespace
}  // namespace tensortune::tracker
