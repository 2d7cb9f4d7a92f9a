// kill -9 in the middle of writing leaves a consistent record DB: the integrity check passes,
// every batch is either wholly there or wholly absent, and writing can go on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "records/record_store.h"
#include "tests/support/test_paths.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

constexpr int kBatch = 7;

ss::Task task() {
  return *ss::make_task(ss::kDensePack, ss::DenseWorkload{4, 64, 64},
                        ss::Target{"llvm -keys=cpu", 16});
}

[[noreturn]] void write_forever(const std::string& path) {
  auto store = tt::records::RecordStore::open(path);
  if (!store) _exit(3);
  const ss::Task t = task();
  auto space = *ss::make_config_space(t);
  const int64_t id = *(*store)->ensure_task(tt::records::task_info(t, space));
  for (int64_t round = 0;; ++round) {
    std::vector<ss::Config> configs;
    std::vector<ss::MeasureResult> results;
    for (int i = 0; i < kBatch; ++i) {
      configs.push_back(*space.config_at((round * kBatch + i) % space.size()));
      ss::MeasureResult r;
      r.config_index = configs.back().index;
      r.costs = {1e-3};
      r.device_key = "x86-avx512";
      results.push_back(r);
    }
    if (!(*store)->add_results(id, space, configs, results, {"crash", "r"}, {}).has_value())
      _exit(4);
  }
}

TEST(RecordStoreCrash, KillNineLeavesAConsistentDb) {
  const std::string path = tt::testing::fresh_db_path("crash");
  { ASSERT_TRUE(tt::records::RecordStore::open(path).has_value()); }
  for (int attempt = 0; attempt < 3; ++attempt) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) write_forever(path);
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 70 * attempt));
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer exited on its own with " << WEXITSTATUS(status);

    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);

    auto store = tt::records::RecordStore::open(path);
    ASSERT_TRUE(store.has_value()) << store.error().message;
    const int64_t n = *(*store)->result_count();
    EXPECT_GT(n, 0);
    EXPECT_EQ(n % kBatch, 0) << "a batch was written in part";
  }
}

}  // namespace
