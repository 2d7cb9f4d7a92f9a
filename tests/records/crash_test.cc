// kill -9 in the middle of writing leaves a consistent record DB: the integrity check passes,
// every batch is either wholly there or wholly absent, and writing can go on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
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

// A DB of some 2,000 wide results, checkpointed and closed: the rows are in the file itself.
void write_checkpointed_db(const std::string& path) {
  {
    auto store = *tt::records::RecordStore::open(path);
    const ss::Task t = task();
    auto space = *ss::make_config_space(t);
    const int64_t id = *store->ensure_task(tt::records::task_info(t, space));
    std::vector<ss::Config> configs;
    std::vector<ss::MeasureResult> results;
    for (int64_t i = 0; i < std::min<int64_t>(space.size(), 2000); ++i) {
      configs.push_back(*space.config_at(i));
      ss::MeasureResult r;
      r.config_index = i;
      r.costs = {1e-3 * (1 + i % 7)};
      r.device_key = "x86-avx512";
      r.error_msg = std::string(64, 'x');  // wide rows: many pages
      results.push_back(r);
    }
    ASSERT_TRUE(store->add_results(id, space, configs, results, {"damage", "r"}, {}));
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  ASSERT_GT(std::filesystem::file_size(path), 16u * 4096);
}

// The middle page's b-tree header and first cells overwritten (a bad disk, a copy cut short).
void damage_middle_page(const std::string& path) {
  const auto size = std::filesystem::file_size(path);
  FILE* f = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, static_cast<long>(size / 2 / 4096 * 4096), SEEK_SET);
  const std::string junk(512, '\xA5');
  std::fwrite(junk.data(), 1, junk.size(), f);
  std::fclose(f);
}

void expect_refused_as_damaged(
    const std::string& path,
    tt::records::RecordStore::Check check = tt::records::RecordStore::Check::kUnlessVerified) {
  auto damaged = tt::records::RecordStore::open(path, check);
  ASSERT_FALSE(damaged) << "a damaged DB opened";
  EXPECT_EQ(damaged.error().code, tt::ErrorCode::kDataLoss);
  EXPECT_NE(damaged.error().message.find("record DB " + path + " is damaged (SQLite quick_check:"),
            std::string::npos)
      << damaged.error().message;
  EXPECT_NE(damaged.error().message.find(".recover"), std::string::npos);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// Bytes flipped in the middle of a DB (a bad disk, a copy cut short) are found when it is
// opened: the open fails naming the file, what SQLite found and the repair, and the file is
// left as it was. Before, it opened, answered best-record queries with whole workloads
// missing and took new rows.
TEST(RecordStoreCrash, ADamagedDbIsRefusedWhenOpened) {
  const std::string path = tt::testing::fresh_db_path("damaged");
  write_checkpointed_db(path);
  damage_middle_page(path);
  const std::string verdict = tt::records::RecordStore::verdict_path(path);
  std::filesystem::remove(verdict);
  const auto before = std::filesystem::last_write_time(path);
  expect_refused_as_damaged(path);
  EXPECT_EQ(std::filesystem::last_write_time(path), before);
  EXPECT_FALSE(std::filesystem::exists(verdict))
      << "no verdict is kept for a file that failed its check";
}

// A passing check is kept beside the DB and spares the next opens their O(size) pass, but only
// while the file is the one that was checked: damage written after it (which moves the file's
// modification and change times) is refused as before.
TEST(RecordStoreCrash, ACheckedFileIsTrustedOnlyUntilItChanges) {
  const std::string path = tt::testing::fresh_db_path("verdict");
  const std::string verdict = tt::records::RecordStore::verdict_path(path);
  write_checkpointed_db(path);
  ASSERT_TRUE(tt::records::RecordStore::open(path).has_value());
  ASSERT_TRUE(std::filesystem::exists(verdict));
  const std::string kept = read_file(verdict);
  ASSERT_TRUE(tt::records::RecordStore::open(path).has_value());
  EXPECT_EQ(read_file(verdict), kept) << "a read leaves the file, and so its verdict, as it was";

  damage_middle_page(path);
  expect_refused_as_damaged(path);
  EXPECT_EQ(read_file(verdict), kept) << "the refused file's verdict is not renewed";
}

// What the verdict does and does not cover, shown from the other side: a verdict that names
// the file as it is now (as if the damage had come from the disk itself, under the
// filesystem) is believed, so it is the file's stamp that decides; kAlways checks regardless.
TEST(RecordStoreCrash, AlwaysChecksWhateverTheVerdictSays) {
  const std::string path = tt::testing::fresh_db_path("always");
  write_checkpointed_db(path);
  ASSERT_TRUE(tt::records::RecordStore::open(path).has_value());
  damage_middle_page(path);
  // The verdict rewritten for the damaged file: the first line kept, the stamp of now.
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const std::string verdict = tt::records::RecordStore::verdict_path(path);
  const std::string header = read_file(verdict).substr(0, read_file(verdict).find('\n'));
  {
    std::ofstream out(verdict, std::ios::trunc);
    out << header << "\n"
        << st.st_dev << " " << st.st_ino << " " << st.st_size << " "
        << int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec << " "
        << int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec << "\n";
  }
  EXPECT_TRUE(tt::records::RecordStore::open(path).has_value())
      << "the default open trusts a verdict that matches the file";
  expect_refused_as_damaged(path, tt::records::RecordStore::Check::kAlways);
}
