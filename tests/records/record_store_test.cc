// The record store: round trip, best query (errors never best), resume sets, refusal of files
// that are not ours, and rollback of failed transactions.
#include "records/record_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "records/schema.h"
#include "tests/support/test_paths.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

ss::Task small_task() {
  return *ss::make_task(ss::kConv2dNCHWc, ss::square_conv2d(8, 8, 16, 3, 1),
                        ss::Target{"llvm -keys=cpu -mcpu=test", 16});
}

ss::MeasureResult ok_result(int64_t index, double cost) {
  ss::MeasureResult r;
  r.config_index = index;
  r.costs = {cost};
  r.device_key = "x86-avx512";
  r.all_cost_s = 0.3;
  r.timestamp = 1700000000;
  r.number = 10;
  return r;
}

TEST(RecordStore, RoundTripBestAndResume) {
  const std::string path = tt::testing::fresh_db_path("records_roundtrip");
  auto store = tt::records::RecordStore::open(path);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  const ss::Task task = small_task();
  auto space = *ss::make_config_space(task);
  auto id = (*store)->ensure_task(tt::records::task_info(task, space));
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(*(*store)->ensure_task(tt::records::task_info(task, space)), *id);

  std::vector<ss::Config> configs{*space.config_at(3), *space.config_at(7), *space.config_at(11)};
  std::vector<ss::MeasureResult> results{ok_result(3, 2e-3), ok_result(7, 1e-3),
                                         ok_result(11, 1e-4)};
  results[2].error_no = ss::MeasureErrorNo::kWrongAnswer;  // fastest, but wrong: never best
  results[2].costs = {ss::kErrorCost};
  ASSERT_TRUE((*store)
                  ->add_results(*id, space, configs, results, {"random", "run1"}, {0, 1, 2})
                  .has_value());

  auto best = (*store)->best(ss::workload_key(task), "", "x86-avx512");
  ASSERT_TRUE(best.has_value());
  ASSERT_TRUE(best->has_value());
  EXPECT_EQ((*best)->record.config_index, 7);
  EXPECT_NEAR((*best)->gflops, ss::task_flop(task) / 1e-3 / 1e9, 1e-6);
  auto entity = tt::records::entity_from_json((*best)->record.entity_json);
  ASSERT_TRUE(entity.has_value());
  EXPECT_EQ(space.config_from_entity(*entity)->index, 7);
  EXPECT_FALSE((*store)->best(ss::workload_key(task), "", "cuda-sm90")->has_value());

  auto measured = (*store)->measured_indices(*id, "x86-avx512");
  ASSERT_TRUE(measured.has_value());
  EXPECT_EQ(*measured, (std::set<int64_t>{3, 7, 11}));

  // Reopen: everything is still there.
  store->reset();
  auto again = tt::records::RecordStore::open(path);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*(*again)->result_count(), 3);
  auto all = (*again)->all_records();
  ASSERT_TRUE(all.has_value());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].result.error_no, ss::MeasureErrorNo::kWrongAnswer);
  EXPECT_EQ((*all)[1].tuner, "random");
  EXPECT_EQ((*all)[1].trial, 1);
  auto groups = (*again)->best_all();
  ASSERT_TRUE(groups.has_value());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].record.config_index, 7);
  EXPECT_EQ((*groups)[0].measured, 3);
}

// The graph tuner's tables: transform times by (device key, shape, blocks), kept across opens;
// graph-best entries replaced per (model, device key), other models and keys untouched.
TEST(RecordStore, GraphTunerTablesKeepTransformsAndReplaceGraphBest) {
  const std::string path = tt::testing::fresh_db_path("records_graph_tables");
  using Store = tt::records::RecordStore;
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.has_value()) << store.error().message;
    auto none = (*store)->transform_cost("x86-avx512", "1x64x56x56", 1, 16);
    ASSERT_TRUE(none.has_value());
    EXPECT_FALSE(none->has_value());
    ASSERT_TRUE((*store)->put_transform_cost("x86-avx512", "1x64x56x56", 1, 16, {2.5e-4, true}));
    ASSERT_TRUE((*store)->put_transform_cost("x86-avx512", "1x64x56x56", 16, 1, {3e-4, false}));
    ASSERT_TRUE((*store)->put_graph_best("model-a", "x86-avx512",
                                         {{"conv1", "[\"w\"]", "[]"}, {"conv2", "[\"v\"]", "[]"}}));
    ASSERT_TRUE((*store)->put_graph_best("model-b", "x86-avx512", {{"conv9", "[]", "[]"}}));
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.has_value());
  auto cost = (*store)->transform_cost("x86-avx512", "1x64x56x56", 1, 16);
  ASSERT_TRUE(cost.has_value() && cost->has_value());
  EXPECT_EQ((*cost)->seconds, 2.5e-4);
  EXPECT_TRUE((*cost)->measured);
  auto estimate = (*store)->transform_cost("x86-avx512", "1x64x56x56", 16, 1);
  ASSERT_TRUE(estimate.has_value() && estimate->has_value());
  EXPECT_FALSE((*estimate)->measured);
  auto other_key = (*store)->transform_cost("cuda-sm80", "1x64x56x56", 1, 16);
  ASSERT_TRUE(other_key.has_value());
  EXPECT_FALSE(other_key->has_value());
  ASSERT_TRUE((*store)->put_graph_best("model-a", "x86-avx512", {{"conv3", "[]", "[]"}}));
  auto a = (*store)->graph_best("model-a", "x86-avx512");
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ(a->front().node, "conv3");
  auto b = (*store)->graph_best("model-b", "x86-avx512");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->size(), 1u);
  auto none = (*store)->graph_best("model-a", "cuda-sm80");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(RecordStore, FileThatIsNotADatabaseIsRefusedAndUntouched) {
  const std::string path = tt::testing::fresh_db_path("records_garbage");
  const std::string content(4096, 'x');
  { std::ofstream(path, std::ios::binary) << content; }
  auto store = tt::records::RecordStore::open(path);
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, tt::ErrorCode::kDataLoss);
  EXPECT_NE(store.error().message.find("is not a tensortune database"), std::string::npos)
      << store.error().message;
  std::ifstream in(path, std::ios::binary);
  std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, content);
}

TEST(RecordStore, DatabaseOfAnotherProgramIsRefused) {
  const std::string path = tt::testing::fresh_db_path("records_other");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE tasks(x); INSERT INTO tasks VALUES (42);", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = tt::records::RecordStore::open(path);
  ASSERT_FALSE(store.has_value());
  EXPECT_NE(store.error().message.find("another program"), std::string::npos)
      << store.error().message;
}

TEST(RecordStore, FailedTransactionRollsBack) {
  const std::string path = tt::testing::fresh_db_path("records_rollback");
  auto store = *tt::records::RecordStore::open(path);
  const ss::Task task = small_task();
  auto space = *ss::make_config_space(task);
  const int64_t id = *store->ensure_task(tt::records::task_info(task, space));
  auto st = store->transaction([&]() -> tt::Status {
    TT_RETURN_IF_ERROR(
        store->add_results(id, space, {*space.config_at(1)}, {ok_result(1, 1e-3)}, {}, {0}));
    return tt::invalid_argument("something later failed");
  });
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(*store->result_count(), 0);
}

}  // namespace

namespace {

// Runs SQL on the DB file directly (what an older tensortune left behind).
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

}  // namespace

// A version-1 DB stored the indices of 3-way split configs (dense_pack's tile_y, tile_x) in
// another candidate order. Opening it reindexes every such config from its stored entity
// (two configs that trade places included) and the best record keeps its config.
TEST(RecordStore, Version1IndicesOfMultiWaySplitsAreRebuiltFromEntities) {
  const std::string path = tt::testing::fresh_db_path("records_migrate_v1");
  const ss::Task task = *ss::make_task("dense_pack.x86", ss::DenseWorkload{4, 64, 32},
                                       ss::Target{"llvm -keys=cpu -mcpu=test", 16});
  auto space = *ss::make_config_space(task);
  int64_t a = -1, b = -1;
  for (int64_t i = 0; i < space.size() && b < 0; ++i) {
    if (!space.is_valid(*space.config_at(i))) continue;
    (a < 0 ? a : b) = i;
  }
  ASSERT_GE(b, 0);
  {
    auto store = tt::records::RecordStore::open(path);
    ASSERT_TRUE(store.has_value()) << store.error().message;
    auto id = *(*store)->ensure_task(tt::records::task_info(task, space));
    ASSERT_TRUE((*store)
                    ->add_results(id, space, {*space.config_at(a), *space.config_at(b)},
                                  {ok_result(a, 1e-3), ok_result(b, 2e-3)}, {"random", "r"}, {0, 1})
                    .has_value());
  }
  // What version 1 left: the two rows' indices trade places, plus an index far away.
  raw_sql(path, "UPDATE configs SET config_index = -5 WHERE config_index = " + std::to_string(a) +
                    "; UPDATE configs SET config_index = " + std::to_string(a) +
                    " WHERE config_index = " + std::to_string(b) +
                    "; UPDATE configs SET config_index = " + std::to_string(b) +
                    " WHERE config_index = -5; UPDATE meta SET value = '1' WHERE key = "
                    "'schema_version';");

  auto store = tt::records::RecordStore::open(path);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  auto best = (*store)->best(ss::workload_key(task), "", "x86-avx512");
  ASSERT_TRUE(best.has_value() && best->has_value());
  EXPECT_EQ((*best)->record.config_index, a) << "the 1 ms result's config, by its entity";
  auto entity = tt::records::entity_from_json((*best)->record.entity_json);
  ASSERT_TRUE(entity.has_value());
  EXPECT_EQ(space.config_from_entity(*entity)->index, a);
  // Reopening finds version 2 and changes nothing.
  store->reset();
  auto again = tt::records::RecordStore::open(path);
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ((*(*again)->best(ss::workload_key(task), "", "x86-avx512"))->record.config_index, a);
}

namespace {

// Brute force over every stored record: the fastest error-free result per (workload, device key).
std::map<std::pair<std::string, std::string>, std::pair<double, int64_t>> brute_force_best(
    tt::records::RecordStore& store) {
  std::map<std::pair<std::string, std::string>, std::pair<double, int64_t>> out;
  const auto all = store.all_records();
  EXPECT_TRUE(all);
  if (!all) return out;
  for (const auto& r : *all) {
    if (!r.result.ok()) continue;
    auto [it, fresh] = out.try_emplace({r.task.workload_key, r.result.device_key},
                                       r.result.mean_cost(), r.config_index);
    if (!fresh && r.result.mean_cost() < it->second.first)
      it->second = {r.result.mean_cost(), r.config_index};
  }
  return out;
}

}  // namespace

// The best-record tables (schema 3), kept by a trigger on every insert: best() and best_all()
// equal brute force over thousands of random results (ties, errors, several device keys and
// thread counts, more than 20 results a group); `records check` agrees and catches damage; an
// older DB gets them from a full scan when opened.
TEST(RecordStore, BestTablesEqualBruteForceAndSurviveMigration) {
  const std::string path = tt::testing::fresh_db_path("records_best_tables");
  std::mt19937 rng(7);
  std::vector<ss::Task> tasks;
  for (int64_t n : {32, 48, 64})
    tasks.push_back(*ss::make_task(ss::kDensePack, ss::DenseWorkload{1, n, n},
                                   ss::Target{"llvm -keys=cpu -mcpu=test", 16}));
  const char* keys[] = {"x86-avx512", "x86-avx2"};
  {
    auto store = tt::records::RecordStore::open(path);
    ASSERT_TRUE(store.has_value()) << store.error().message;
    for (int round = 0; round < 30; ++round) {
      const ss::Task& task = tasks[rng() % tasks.size()];
      auto space = *ss::make_config_space(task);
      auto id = *(*store)->ensure_task(tt::records::task_info(task, space));
      std::vector<ss::Config> configs;
      std::vector<ss::MeasureResult> results;
      for (int i = 0; i < 40; ++i) {
        const int64_t index = static_cast<int64_t>(rng() % static_cast<uint32_t>(space.size()));
        configs.push_back(*space.config_at(index));
        // Costs on a coarse grid, so that ties happen; one in five fails.
        ss::MeasureResult r = ok_result(index, 1e-4 * double(1 + rng() % 50));
        r.device_key = keys[rng() % 2];
        r.threads = 1 + static_cast<int>(rng() % 2);
        if (rng() % 5 == 0) {
          r.error_no = ss::MeasureErrorNo::kRunTimeout;
          r.costs = {ss::kErrorCost};
        }
        results.push_back(r);
      }
      ASSERT_TRUE((*store)->add_results(id, space, configs, results, {"random", "r"}, {}));
    }
    const auto want = brute_force_best(**store);
    for (const auto& [group, cost_index] : want) {
      auto best = (*store)->best(group.first, "", group.second);
      ASSERT_TRUE(best && *best) << group.first;
      EXPECT_DOUBLE_EQ((*best)->record.result.mean_cost(), cost_index.first);
    }
    auto all = (*store)->best_all();
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), want.size());
    int64_t measured = 0;
    for (const auto& b : *all) {
      EXPECT_DOUBLE_EQ(b.record.result.mean_cost(),
                       want.at({b.record.task.workload_key, b.record.result.device_key}).first);
      measured += b.measured;
    }
    EXPECT_EQ(measured, 30 * 40);
    auto check = (*store)->check_best_tables();
    ASSERT_TRUE(check) << check.error().message;
    EXPECT_EQ(check->mismatches, 0) << (check->examples.empty() ? "" : check->examples[0]);
    EXPECT_EQ(check->results, 30 * 40);

    // Filtered queries against brute force: top 3 per group on 2 threads of one key, from the
    // best-record tables and from a scan (a time range covering everything) alike.
    const auto records = *(*store)->all_records();
    std::map<std::string, std::vector<double>> want_top;  // workload key -> sorted costs
    for (const auto& r : records)
      if (r.result.ok() && r.result.device_key == "x86-avx2" && r.result.threads == 2)
        want_top[r.task.workload_key].push_back(r.result.mean_cost());
    for (auto& [key, costs] : want_top) {
      std::sort(costs.begin(), costs.end());
      costs.resize(std::min<size_t>(costs.size(), 3));
    }
    tt::records::RecordStore::BestQuery q;
    q.device_key = "x86-avx2";
    q.threads = 2;
    q.top_k = 3;
    for (double since : {0.0, 1.0}) {
      q.since = since;
      auto got = (*store)->query_best(q);
      ASSERT_TRUE(got) << got.error().message;
      std::map<std::string, std::vector<double>> seen;
      for (const auto& b : *got) {
        EXPECT_EQ(b.record.result.threads, 2);
        seen[b.record.task.workload_key].push_back(b.record.result.mean_cost());
      }
      EXPECT_EQ(seen, want_top) << "since " << since;
    }
    // By template and shape, by exact keys, and a time range that holds nothing.
    q = {};
    q.template_name = "dense_pack";
    q.shape = "48x48";  // the weight of dense 1x48 w48x48
    auto by_shape = (*store)->query_best(q);
    ASSERT_TRUE(by_shape);
    ASSERT_FALSE(by_shape->empty());
    for (const auto& b : *by_shape)
      EXPECT_EQ(b.record.task.workload_key, ss::workload_key(tasks[1]));
    q = {};
    q.workload_keys = {ss::workload_key(tasks[0]), ss::workload_key(tasks[2])};
    auto by_keys = (*store)->query_best(q);
    ASSERT_TRUE(by_keys);
    EXPECT_EQ(by_keys->size(), 4u) << "2 workloads x 2 device keys";
    q = {};
    q.since = 1800000000;
    EXPECT_TRUE((*store)->query_best(q)->empty());
    q = {};
    q.shape = "1x4y";
    auto bad = (*store)->query_best(q);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("shape = '1x4y'"), std::string::npos);
  }
  int top_rows = 0;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "SELECT max(n), sum(n) FROM (SELECT count(*) AS n FROM "
                                 "top_results GROUP BY task_id, device_key, threads)",
                                 -1, &q, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(q, 0), tt::records::kTopResults) << "groups are capped at 20";
    top_rows = sqlite3_column_int(q, 1);
    sqlite3_finalize(q);
    sqlite3_close(db);
  }
  // Damage is found and repaired.
  raw_sql(path,
          "DELETE FROM top_results WHERE result_id = (SELECT result_id FROM top_results LIMIT 1)");
  {
    auto store = tt::records::RecordStore::open(path);
    ASSERT_TRUE(store);
    auto check = (*store)->check_best_tables();
    ASSERT_TRUE(check);
    EXPECT_GT(check->mismatches, 0);
    ASSERT_TRUE((*store)->rebuild_best_tables());
    EXPECT_EQ((*store)->check_best_tables()->mismatches, 0);
  }
  // A version-2 DB (no best tables filled) gets them built when it is opened.
  raw_sql(path,
          "DELETE FROM top_results; DELETE FROM best_groups; UPDATE meta SET value = '2' WHERE "
          "key = 'schema_version';");
  auto store = tt::records::RecordStore::open(path);
  ASSERT_TRUE(store) << store.error().message;
  auto check = (*store)->check_best_tables();
  ASSERT_TRUE(check);
  EXPECT_EQ(check->mismatches, 0);
  EXPECT_GT(check->groups, 0);
  auto all = (*store)->best_all();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), brute_force_best(**store).size());
  EXPECT_GT(top_rows, 0);
}

// A reader opening an archive whose writer holds the write lock (the tracker between results)
// is not made to wait for it: an up-to-date DB is opened without writing anything.
TEST(RecordStore, OpeningAnUpToDateDbTakesNoWriteLock) {
  const std::string path = tt::testing::fresh_db_path("records_open_locked");
  { ASSERT_TRUE(tt::records::RecordStore::open(path)); }
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &writer), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(writer, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto reader = tt::records::RecordStore::open(path);
  EXPECT_TRUE(reader) << reader.error().message;
  if (reader) EXPECT_TRUE((*reader)->best_all()) << "and it reads while the writer holds the lock";
  sqlite3_exec(writer, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(writer);
}

// Farm attribution: who submitted and who measured each result is stored, read
// back, carried by best queries, and a device can be left out after the fact; a version-4 DB
// gains the columns (empty) when opened, its rows untouched.
TEST(RecordStore, FarmAttributionIsStoredAndADeviceCanBeExcluded) {
  const std::string path = tt::testing::fresh_db_path("records_attribution");
  const ss::Task task = small_task();
  auto space = *ss::make_config_space(task);
  {
    auto store = tt::records::RecordStore::open(path);
    ASSERT_TRUE(store) << store.error().message;
    auto id = *(*store)->ensure_task(tt::records::task_info(task, space));
    ASSERT_TRUE((*store)->add_results(id, space, {*space.config_at(1)}, {ok_result(1, 5e-3)},
                                      {"random", "old"}, {0}));
  }
  // What version 4 left: no attribution columns.
  raw_sql(path,
          "ALTER TABLE results DROP COLUMN client; ALTER TABLE results DROP COLUMN device; "
          "UPDATE meta SET value = '4' WHERE key = 'schema_version';");
  auto store = tt::records::RecordStore::open(path);
  ASSERT_TRUE(store) << store.error().message;
  auto id = *(*store)->ensure_task(tt::records::task_info(task, space));
  ASSERT_TRUE((*store)->add_results(id, space, {*space.config_at(2)}, {ok_result(2, 3e-3)},
                                    {"farm", "job-a", "alice", "box1/host:1"}, {-1}));
  ASSERT_TRUE((*store)->add_results(id, space, {*space.config_at(3)}, {ok_result(3, 1e-6)},
                                    {"farm", "job-b", "bob", "liar/host:2"}, {-1}));
  auto all = (*store)->all_records();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].device, "") << "the version-4 row";
  EXPECT_EQ((*all)[1].client, "alice");
  EXPECT_EQ((*all)[1].device, "box1/host:1");

  tt::records::RecordStore::BestQuery q;
  q.template_name = "conv2d_NCHWc";
  auto best = (*store)->query_best(q);
  ASSERT_TRUE(best);
  ASSERT_EQ(best->size(), 1u);
  EXPECT_EQ((*best)[0].record.device, "liar/host:2") << "the lie is fastest until excluded";
  EXPECT_EQ((*best)[0].record.client, "bob");
  q.exclude_devices = {"liar/host:2"};
  best = (*store)->query_best(q);
  ASSERT_TRUE(best);
  ASSERT_EQ(best->size(), 1u);
  EXPECT_EQ((*best)[0].record.config_index, 2);
  EXPECT_EQ((*best)[0].record.device, "box1/host:1");
  EXPECT_EQ((*best)[0].measured, 2) << "the excluded device's results do not count";
  q.exclude_devices = {""};
  EXPECT_FALSE((*store)->query_best(q)) << "an empty device name is refused";
}

// compact keeps the K fastest error-free results per (workload, device key) and every recent
// one, leaves the best unchanged and the best-record tables consistent, and shrinks the file.
TEST(RecordStore, CompactKeepsTheBestAndTheRecent) {
  const std::string path = tt::testing::fresh_db_path("records_compact");
  const ss::Task task = small_task();
  auto space = *ss::make_config_space(task);
  auto store = tt::records::RecordStore::open(path);
  ASSERT_TRUE(store);
  auto id = *(*store)->ensure_task(tt::records::task_info(task, space));
  std::vector<ss::Config> configs;
  std::vector<ss::MeasureResult> results;
  int64_t recent = 0;
  for (int i = 0; i < 40; ++i) {
    configs.push_back(*space.config_at(i));
    ss::MeasureResult r = ok_result(i, 1e-3 * (1 + (i * 7) % 40));
    r.device_key = i % 2 ? "x86-avx512" : "x86-avx2";
    r.timestamp = i < 30 ? 1700000000 : 1750000000;  // the last 10 are recent
    if (i % 5 == 0) {
      r.error_no = ss::MeasureErrorNo::kCompileHost;
      r.costs = {ss::kErrorCost};
    }
    recent += i >= 30;
    results.push_back(r);
  }
  ASSERT_TRUE((*store)->add_results(id, space, configs, results, {"random", "r"}, {}));
  const auto best_before = *(*store)->best_all();
  auto c = (*store)->compact(2, 1720000000);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->before, 40);
  // Kept: per key the 2 fastest error-free (all old here, as the costs are spread), plus the 10
  // recent ones, whatever they are.
  auto all = *(*store)->all_records();
  int64_t kept_recent = 0;
  std::map<std::string, int> old_ok;
  for (const auto& r : all) {
    if (r.result.timestamp >= 1720000000) {
      ++kept_recent;
    } else {
      EXPECT_TRUE(r.result.ok());
      ++old_ok[r.result.device_key];
    }
  }
  EXPECT_EQ(kept_recent, recent);
  for (const auto& [key, n] : old_ok) EXPECT_LE(n, 2) << key;
  EXPECT_EQ(c->before - c->deleted, static_cast<int64_t>(all.size()));
  const auto best_after = *(*store)->best_all();
  ASSERT_EQ(best_after.size(), best_before.size());
  for (size_t i = 0; i < best_after.size(); ++i)
    EXPECT_EQ(best_after[i].record.config_index, best_before[i].record.config_index);
  EXPECT_EQ((*store)->check_best_tables()->mismatches, 0);
  EXPECT_FALSE((*store)->compact(0, 0));
}

// WAL readers never block the writer: 8 threads query best records (each with its own
// connection, as the tracker's clients do) while one writes batches; nobody sees SQLITE_BUSY and
// every batch lands.
TEST(RecordStore, EightReadersAndAWriterNeverSeeBusy) {
  const std::string path = tt::testing::fresh_db_path("records_concurrency");
  const ss::Task task = small_task();
  auto space = *ss::make_config_space(task);
  int64_t id = 0;
  {
    auto store = tt::records::RecordStore::open(path);
    ASSERT_TRUE(store);
    id = *(*store)->ensure_task(tt::records::task_info(task, space));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> reader_errors{0}, reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&, t] {
      auto store = tt::records::RecordStore::open(path);
      if (!store) return void(++reader_errors);
      while (!stop) {
        tt::records::RecordStore::BestQuery q;
        q.top_k = 1 + t % 3;
        auto a = (*store)->query_best(q);
        auto b = (*store)->best_all();
        if (!a || !b) ++reader_errors;
        ++reads;
      }
    });
  }
  int batches = 0;
  std::string writer_error;
  {
    auto writer = tt::records::RecordStore::open(path);
    ASSERT_TRUE(writer);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (int64_t i = 0; std::chrono::steady_clock::now() < end; i += 8, ++batches) {
      std::vector<ss::Config> configs;
      std::vector<ss::MeasureResult> results;
      for (int64_t k = 0; k < 8; ++k) {
        configs.push_back(*space.config_at((i + k) % space.size()));
        results.push_back(ok_result((i + k) % space.size(), 1e-3 * double(1 + (i + k) % 97)));
      }
      auto s = (*writer)->add_results(id, space, configs, results, {"random", "w"}, {});
      if (!s) {
        writer_error = s.error().message;
        break;
      }
    }
  }
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(writer_error, "");
  EXPECT_EQ(reader_errors, 0);
  EXPECT_GT(reads, 8);
  auto store = tt::records::RecordStore::open(path);
  EXPECT_EQ(*(*store)->result_count(), batches * 8);
  EXPECT_EQ((*store)->check_best_tables()->mismatches, 0);
}

TEST(RecordStore, KernelCacheFindsABuildByEveryKeyFieldAndDropsTheOldestOverItsSize) {
  const std::string path = tt::testing::fresh_db_path("records_kernel_cache");
  auto store = tt::records::RecordStore::open(path);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  ss::KernelBinary key;
  key.format = ss::KernelFormat::kCpuObject;
  key.arch = "znver4";
  key.features = {"avx2", "avx512f"};
  key.compiler = "LLVM 14.0.6";
  key.source_sha256 = std::string(64, 'a');
  // An untouched DB has no cache table, and a lookup does not make one.
  auto none = (*store)->cached_kernel(key);
  ASSERT_TRUE(none.has_value()) << none.error().message;
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ((*store)->kernel_cache_size()->kernels, 0);

  auto built = [&](char source, int bytes) {
    ss::KernelBinary b = key;
    b.source_sha256 = std::string(64, source);
    b.code = std::string(static_cast<size_t>(bytes), source);
    b.build_s = 0.5;
    return b;
  };
  ASSERT_TRUE((*store)->cache_kernel(built('a', 1000), 2500));
  auto hit = (*store)->cached_kernel(key);
  ASSERT_TRUE(hit.has_value());
  ASSERT_TRUE(hit->has_value());
  EXPECT_EQ((*hit)->code, std::string(1000, 'a'));
  EXPECT_EQ((*hit)->build_s, 0.5);
  // Any other field of the key is another build.
  for (auto change : std::vector<std::function<void(ss::KernelBinary&)>>{
           [](ss::KernelBinary& k) { k.format = ss::KernelFormat::kCubin; },
           [](ss::KernelBinary& k) { k.arch = "znver3"; },
           [](ss::KernelBinary& k) { k.features.pop_back(); },
           [](ss::KernelBinary& k) { k.compiler = "LLVM 15.0.7"; },
           [](ss::KernelBinary& k) { k.source_sha256 = std::string(64, 'b'); }}) {
    ss::KernelBinary other = key;
    change(other);
    EXPECT_FALSE((*store)->cached_kernel(other)->has_value());
  }
  // Over 2500 bytes, the oldest go first.
  ASSERT_TRUE((*store)->cache_kernel(built('b', 1000), 2500));
  ASSERT_TRUE((*store)->cache_kernel(built('c', 1000), 2500));
  const auto size = (*store)->kernel_cache_size();
  ASSERT_TRUE(size.has_value());
  EXPECT_EQ(size->kernels, 2);
  EXPECT_EQ(size->bytes, 2000);
  EXPECT_FALSE((*store)->cached_kernel(key)->has_value());
  ss::KernelBinary newest = key;
  newest.source_sha256 = std::string(64, 'c');
  EXPECT_TRUE((*store)->cached_kernel(newest)->has_value());
}
