// AutoTVM logs: a real TVM line imports and decodes; export -> import round trips; every
// malformed line is refused with its line number and nothing is written.
#include <gtest/gtest.h>


#include "tests/support/test_paths.h"
#include <sstream>

#include "records/autotvm_log.h"
#include "schedule_space/conv2d_nchwc_template.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

// Two lines of a log written by TVM 0.10 for ResNet-18's first conv (RESEARCH.md 2.2).
const char* kTvmLog =
    "# comment lines are skipped\n"
    "{\"input\": [\"llvm -keys=cpu \", \"conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 3, 224, 224], \"float32\"], "
    "[\"TENSOR\", [64, 3, 7, 7], \"float32\"], [2, 2], [3, 3, 3, 3], [1, 1], \"NCHW\", \"NCHW\", \"float32\"], {}], "
    "\"config\": {\"index\": 172, \"code_hash\": null, \"entity\": [[\"tile_ic\", \"sp\", [-1, 1]], "
    "[\"tile_oc\", \"sp\", [-1, 4]], [\"tile_ow\", \"sp\", [-1, 1]], [\"unroll_kw\", \"ot\", false]]}, "
    "\"result\": [[0.0045656413], 0, 0.5309267044067383, 1676344759.520081], \"version\": 0.2, \"tvm_version\": \"0.10.0\"}\n"
    "{\"input\": [\"llvm -keys=cpu \", \"conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 3, 224, 224], \"float32\"], "
    "[\"TENSOR\", [64, 3, 7, 7], \"float32\"], [2, 2], [3, 3, 3, 3], [1, 1], \"NCHW\", \"NCHW\", \"float32\"], {}], "
    "\"config\": {\"index\": 47, \"code_hash\": null, \"entity\": [[\"tile_ic\", \"sp\", [-1, 3]], "
    "[\"tile_oc\", \"sp\", [-1, 4]], [\"tile_ow\", \"sp\", [-1, 64]], [\"unroll_kw\", \"ot\", true]]}, "
    "\"result\": [[1000000000.0], 7, 10.2, 1676344760.1], \"version\": 0.2, \"tvm_version\": \"0.10.0\"}\n";

TEST(AutoTvmLog, RealTvmLogImports) {
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_real"));
  std::istringstream in(kTvmLog);
  auto stats = tt::records::import_autotvm_log(*store, in, "tvm.log", "x86-avx512", 16);
  ASSERT_TRUE(stats.has_value()) << stats.error().message;
  EXPECT_EQ(stats->lines, 3);
  EXPECT_EQ(stats->imported, 2);
  auto best = store->best_all();
  ASSERT_EQ(best->size(), 1u);
  const auto& r = (*best)[0].record;
  EXPECT_EQ(r.task.target, "llvm -keys=cpu ");
  EXPECT_DOUBLE_EQ(r.result.costs[0], 0.0045656413);  // the RUN_TIMEOUT line is never best
  auto entity = *tt::records::entity_from_json(r.entity_json);
  ss::Conv2dWorkload w;
  w.in_channels = 3;
  w.in_height = w.in_width = 224;
  w.out_channels = 64;
  w.kernel_h = w.kernel_w = 7;
  w.stride_h = w.stride_w = 2;
  w.pad_top = w.pad_left = w.pad_bottom = w.pad_right = 3;
  auto space = ss::conv2d_nchwc_space(w, 16);
  auto s = ss::conv2d_nchwc_schedule(space, *space.config_from_entity(entity));
  EXPECT_EQ(s.ic_bn, 1);
  EXPECT_EQ(s.oc_bn, 4);
  EXPECT_EQ(s.reg_n, 1);
  EXPECT_FALSE(s.unroll_kw);
  auto all = *store->all_records();
  EXPECT_EQ(all[1].result.error_no, ss::MeasureErrorNo::kRunTimeout);
}

TEST(AutoTvmLog, ExportImportRoundTrip) {
  auto a = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_a"));
  std::istringstream in(kTvmLog);
  ASSERT_TRUE(tt::records::import_autotvm_log(*a, in, "tvm.log", "x86-avx512", 16).has_value());
  std::ostringstream exported;
  ASSERT_EQ(*tt::records::export_autotvm_log(*a, exported), 2);
  auto b = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_b"));
  std::istringstream again(exported.str());
  ASSERT_TRUE(tt::records::import_autotvm_log(*b, again, "export.log", "x86-avx512", 16).has_value());
  auto ra = *a->all_records();
  auto rb = *b->all_records();
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].task.workload_key, rb[i].task.workload_key);
    EXPECT_EQ(ra[i].task.target, rb[i].task.target);
    EXPECT_EQ(ra[i].config_index, rb[i].config_index);
    EXPECT_EQ(ra[i].entity_json, rb[i].entity_json);
    EXPECT_EQ(ra[i].result.costs, rb[i].result.costs);
    EXPECT_EQ(ra[i].result.error_no, rb[i].result.error_no);
    EXPECT_DOUBLE_EQ(ra[i].result.timestamp, rb[i].result.timestamp);
  }
  // A second export of the re-imported DB is byte-identical.
  std::ostringstream twice;
  ASSERT_TRUE(tt::records::export_autotvm_log(*b, twice).has_value());
  EXPECT_EQ(twice.str(), exported.str());
}

struct BadLine {
  std::string line;
  std::string fragment;
};

TEST(AutoTvmLog, MalformedLinesAreRefusedWithLineNumberAndWriteNothing) {
  std::string good = std::string(kTvmLog).substr(std::string(kTvmLog).find('\n') + 1);
  good = good.substr(0, good.find('\n'));
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::vector<BadLine> cases = {
      {"{\"input\": [", "tvm.log:2: not JSON"},
      {replace("\"result\": [[0.0045656413], 0,", "\"result\": [[0.0045656413], 12,"), "result[1]: error_no 12"},
      {replace("conv2d_NCHWc.x86", "conv2d_winograd.x86"), "task 'conv2d_winograd.x86' is not a template"},
      {replace("\"tile_ic\"", "\"tile_zz\""), "unknown knob 'tile_zz'"},
      {replace("[\"tile_oc\", \"sp\", [-1, 4]]", "[\"tile_oc\", \"sp\", [-1, 5]]"), "tile_oc value [-1, 5] is not one of"},
      {replace("[3, 3, 3, 3]", "[3, 3, 3]"), "pads = '3,3,3' needs 1, 2 or 4 values"},
      {replace("[64, 3, 7, 7]", "[64, 4, 7, 7]"), "does not match data channels"},
      {replace("[1, 3, 224, 224]", "[1, 3, 0, 224]"), "in_height = 0, must be > 0"},
      {replace("[[0.0045656413]", "[[-1.0]"), "cost -1.0 is not a non-negative number"},
      {good.substr(0, good.size() / 2), "not JSON"},
  };
  for (const BadLine& c : cases) {
    auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_bad"));
    std::istringstream in(good + "\n" + c.line + "\n");
    auto stats = tt::records::import_autotvm_log(*store, in, "tvm.log", "x86-avx512", 16);
    ASSERT_FALSE(stats.has_value()) << c.fragment;
    EXPECT_NE(stats.error().message.find("tvm.log:2"), std::string::npos) << stats.error().message;
    EXPECT_NE(stats.error().message.find(c.fragment), std::string::npos) << stats.error().message;
    EXPECT_EQ(*store->result_count(), 0) << "a failed import wrote records";
  }
}

TEST(AutoTvmLog, ImportIntoExistingDbKeepsWhatWasThere) {
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_keep"));
  std::istringstream first(kTvmLog);
  ASSERT_TRUE(tt::records::import_autotvm_log(*store, first, "tvm.log", "x86-avx512", 16).has_value());
  std::istringstream bad(std::string(kTvmLog) + "garbage\n");
  ASSERT_FALSE(tt::records::import_autotvm_log(*store, bad, "bad.log", "x86-avx512", 16).has_value());
  EXPECT_EQ(*store->result_count(), 2);
}

}  // namespace
