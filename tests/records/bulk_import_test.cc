// records import's fast path: the scanner accepts only what the validating parser accepts, with
// the same fields; a bulk insert leaves the best-record tables equal to a full scan, merged with
// what the DB held, and the trigger in place for the inserts after it (also after a failure).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "records/autotvm_log.h"
#include "records/detail/log_line_scanner.h"
#include "records/record_store.h"
#include "tests/support/test_paths.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

const char* kTarget = "llvm -keys=cpu -mcpu=test";

std::vector<ss::Task> dense_tasks() {
  std::vector<ss::Task> tasks;
  for (int64_t n : {32, 48, 64})
    tasks.push_back(
        *ss::make_task(ss::kDensePack, ss::DenseWorkload{2, n, n}, ss::Target{kTarget, 16}));
  return tasks;
}

// Random results of the tasks (costs on a coarse grid, so that ties happen; one in five fails),
// through the row-by-row path (the trigger).
void add_random_results(tt::records::RecordStore& store, std::mt19937& rng, int batches) {
  const char* keys[] = {"x86-avx512", "x86-avx2"};
  const auto tasks = dense_tasks();
  for (int b = 0; b < batches; ++b) {
    const ss::Task& task = tasks[rng() % tasks.size()];
    auto space = *ss::make_config_space(task);
    auto id = *store.ensure_task(tt::records::task_info(task, space));
    std::vector<ss::Config> configs;
    std::vector<ss::MeasureResult> results;
    for (int i = 0; i < 30; ++i) {
      ss::MeasureResult r;
      r.config_index = static_cast<int64_t>(rng() % static_cast<uint32_t>(space.size()));
      configs.push_back(*space.config_at(r.config_index));
      r.costs = {1e-4 * double(1 + rng() % 40)};
      r.device_key = keys[rng() % 2];
      r.threads = 1 + static_cast<int>(rng() % 2);
      r.timestamp = 1.7e9 + b;
      if (rng() % 5 == 0) {
        r.error_no = ss::MeasureErrorNo::kRunTimeout;
        r.costs = {ss::kErrorCost};
      }
      results.push_back(r);
    }
    ASSERT_TRUE(store.add_results(id, space, configs, results, {"random", "r"}, {}));
  }
}

void expect_best_tables_agree(tt::records::RecordStore& store, const char* when) {
  auto check = store.check_best_tables();
  ASSERT_TRUE(check.has_value()) << check.error().message;
  EXPECT_EQ(check->mismatches, 0) << when << ": "
                                  << (check->examples.empty() ? "" : check->examples[0]);
}

TEST(BulkImport, BestTablesMergeWithWhatTheDbHeldAndTheTriggerStaysInPlace) {
  std::mt19937 rng(11);
  // A log of random results (both device keys, both thread counts, failures).
  std::stringstream log;
  {
    auto source = *tt::records::RecordStore::open(tt::testing::fresh_db_path("bulk_source"));
    add_random_results(*source, rng, 40);
    ASSERT_TRUE(tt::records::export_autotvm_log(*source, log).has_value());
  }
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("bulk_target"));
  add_random_results(*store, rng, 40);
  const int64_t before = *store->result_count();

  tt::records::ImportOptions options;
  options.device_key = "x86-avx512";
  auto stats = tt::records::import_autotvm_log(*store, log, "random.log", options);
  ASSERT_TRUE(stats.has_value()) << stats.error().message;
  EXPECT_EQ(stats->imported, 40 * 30);
  EXPECT_EQ(*store->result_count(), before + 40 * 30);
  expect_best_tables_agree(*store, "after the import");

  // A failed import (its last line malformed) writes nothing and keeps the trigger.
  std::stringstream bad(log.str() + "{\"input\": 1}\n");
  bad.seekg(0);
  ASSERT_FALSE(tt::records::import_autotvm_log(*store, bad, "bad.log", options).has_value());
  EXPECT_EQ(*store->result_count(), before + 40 * 30);
  add_random_results(*store, rng, 10);
  expect_best_tables_agree(*store, "after row-by-row inserts that followed the imports");
}

// Well-formed lines of every entity kind, then the same lines damaged one field at a time.
std::vector<std::string> sample_lines() {
  const std::string input =
      "[\"llvm -keys=cpu\", \"dense_pack.x86\", [[\"TENSOR\", [2, 64], \"float32\"], "
      "[\"TENSOR\", [64, 64], \"float32\"], null, \"float32\"], {}]";
  const std::string good_entity =
      "[[\"tile_y\", \"sp\", [-1, 1, 2]], [\"tile_x\", \"sp\", [-1, 4, 8]], [\"tile_k\", \"sp\", "
      "[-1, 16]], [\"flag\", \"ot\", true], [\"depth\", \"ot\", 3], [\"how\", \"an\", \"vec\"]]";
  auto make = [&](const std::string& in, const std::string& entity, const std::string& index,
                  const std::string& result, const std::string& extra) {
    return "{\"input\": " + in + ", \"config\": {\"index\": " + index +
           ", \"code_hash\": null, \"entity\": " + entity + "}, \"result\": " + result +
           ", \"version\": 0.2" + extra + "}";
  };
  const std::string good_result = "[[1.5e-05, 2e-05], 0, 0.25, 1700000000.5]";
  std::vector<std::string> lines = {
      make(input, good_entity, "7", good_result, ""),
      make(input, good_entity, "\"x\"", good_result, ", \"tvm_version\": \"0.13\""),
      make(input, "[]", "0", "[[3], 4, 1, 2]", ""),
      make(input, good_entity, "7", "[[1e-3], 8, 2, 3]", ""),
      // damaged
      make(input, good_entity, "7", "[[1e-3], 9, 2, 3]", ""),
      make(input, good_entity, "7", "[[1e-3], -1, 2, 3]", ""),
      make(input, good_entity, "7", "[[1e-3], 1.5, 2, 3]", ""),
      make(input, good_entity, "7", "[[], 0, 2, 3]", ""),
      make(input, good_entity, "7", "[[-1e-3], 0, 2, 3]", ""),
      make(input, good_entity, "7", "[[\"1\"], 0, 2, 3]", ""),
      make(input, good_entity, "7", "[[1e-3], 0, \"2\", 3]", ""),
      make(input, good_entity, "7", "[[1e-3], 0, 2]", ""),
      make(input, "[[\"tile_y\", \"sp\", [-1, 1.0, 2]]]", "7", good_result, ""),
      make(input, "[[\"tile_y\", \"sp\", 2]]", "7", good_result, ""),
      make(input, "[[\"tile_y\", \"zz\", 2]]", "7", good_result, ""),
      make(input, "[[\"tile_y\", \"ot\", \"a\"]]", "7", good_result, ""),
      make(input, "[[\"tile_y\", \"an\", 3]]", "7", good_result, ""),
      make(input, "[[\"tile_y\", \"sp\"]]", "7", good_result, ""),
      make(input, "[[1, \"sp\", [1]]]", "7", good_result, ""),
      make(input, "{}", "7", good_result, ""),
      make("[\"llvm\", \"dense_pack.x86\"]", good_entity, "7", good_result, ""),
      make("[3, \"dense_pack.x86\", [], {}]", good_entity, "7", good_result, ""),
      "{\"v\": 0.1, \"i\": []}",
      "[1, 2]",
      "not json",
      make(input, good_entity, "7", good_result, "") + " trailing",
  };
  return lines;
}

TEST(BulkImport, ScannerAcceptsOnlyWhatTheValidatingParserAcceptsWithTheSameFields) {
  tt::records::detail::LogLineScanner scanner;
  int scanned_count = 0;
  for (const std::string& line : sample_lines()) {
    auto scanned = scanner.scan(line);
    auto parsed = tt::records::parse_autotvm_line(line, 16);
    if (!scanned) continue;  // the validating parser decides, whatever it says
    ++scanned_count;
    ASSERT_TRUE(parsed.has_value()) << line << "\n" << parsed.error().message;
    EXPECT_EQ(scanned->entity, parsed->entity) << line;
    EXPECT_EQ(scanned->logged_index, parsed->logged_index) << line;
    EXPECT_EQ(scanned->result.costs, parsed->result.costs) << line;
    EXPECT_EQ(scanned->result.error_no, parsed->result.error_no) << line;
    EXPECT_EQ(scanned->result.all_cost_s, parsed->result.all_cost_s) << line;
    EXPECT_EQ(scanned->result.timestamp, parsed->result.timestamp) << line;
    EXPECT_FALSE(scanned->input_key.empty());
  }
  EXPECT_EQ(scanned_count, 4) << "the four well-formed lines take the fast path";
  // Lines of one task share their key, whatever their spacing.
  const auto a = scanner.scan(sample_lines()[0]);
  const auto c = scanner.scan(sample_lines()[2]);
  ASSERT_TRUE(a && c);
  EXPECT_EQ(a->input_key, c->input_key);
}

// Found by fuzz_autotvm_log: a key given twice ("result" here) meant the first to the scanner
// and the last to the parser. Both refuse such a line now, the parser naming the key.
TEST(BulkImport, AKeyGivenTwiceIsRefusedByTheScannerAndTheParser) {
  tt::records::detail::LogLineScanner scanner;
  const std::string good = sample_lines()[0];
  ASSERT_TRUE(scanner.scan(good).has_value());
  const std::string twice = "{\"result\": [[9.0], 0, 0.1, 1.0], " + good.substr(1);
  EXPECT_FALSE(scanner.scan(twice).has_value());
  auto parsed = tt::records::parse_autotvm_line(twice, 16);
  ASSERT_FALSE(parsed.has_value());
  EXPECT_NE(parsed.error().message.find("'result' appears twice"), std::string::npos)
      << parsed.error().message;
  // Inside config too: {"index": 7, ..., "index": 3, "entity": ...}.
  std::string nested = good;
  nested.insert(nested.find("\"entity\""), "\"index\": 3, ");
  EXPECT_FALSE(scanner.scan(nested).has_value());
  EXPECT_FALSE(tt::records::parse_autotvm_line(nested, 16).has_value());
}

}  // namespace
