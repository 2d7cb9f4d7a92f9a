// AutoTVM logs: a real TVM line imports and decodes; export -> import round trips; every
// malformed line is refused with its line number and nothing is written.
#include "records/autotvm_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "schedule_space/batch_matmul_cuda_template.h"
#include "schedule_space/batch_matmul_template.h"
#include "schedule_space/conv2d_cuda_template.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/conv2d_winograd_cuda_template.h"
#include "schedule_space/depthwise_conv2d_nchwc_template.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "tests/support/test_paths.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

/// A file of tests/data (AutoTVM's published logs), whole; empty when it cannot be read.
std::string test_data(const std::string& name) {
  std::ifstream file(std::string(TT_SOURCE_DIR) + "/tests/data/" + name);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

tt::records::ImportOptions import_options(std::string device_key, bool skip_unsupported = false) {
  tt::records::ImportOptions o;
  o.device_key = std::move(device_key);
  o.vector_lanes = 16;
  o.skip_unsupported = skip_unsupported;
  return o;
}
const tt::records::ImportOptions kImport = import_options("x86-avx512");

// Two lines of a log written by TVM 0.10 for ResNet-18's first conv (RESEARCH.md 2.2).
const char* kTvmLog =
    "# comment lines are skipped\n"
    "{\"input\": [\"llvm -keys=cpu \", \"conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 3, 224, 224], "
    "\"float32\"], "
    "[\"TENSOR\", [64, 3, 7, 7], \"float32\"], [2, 2], [3, 3, 3, 3], [1, 1], \"NCHW\", \"NCHW\", "
    "\"float32\"], {}], "
    "\"config\": {\"index\": 172, \"code_hash\": null, \"entity\": [[\"tile_ic\", \"sp\", [-1, "
    "1]], "
    "[\"tile_oc\", \"sp\", [-1, 4]], [\"tile_ow\", \"sp\", [-1, 1]], [\"unroll_kw\", \"ot\", "
    "false]]}, "
    "\"result\": [[0.0045656413], 0, 0.5309267044067383, 1676344759.520081], \"version\": 0.2, "
    "\"tvm_version\": \"0.10.0\"}\n"
    "{\"input\": [\"llvm -keys=cpu \", \"conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 3, 224, 224], "
    "\"float32\"], "
    "[\"TENSOR\", [64, 3, 7, 7], \"float32\"], [2, 2], [3, 3, 3, 3], [1, 1], \"NCHW\", \"NCHW\", "
    "\"float32\"], {}], "
    "\"config\": {\"index\": 47, \"code_hash\": null, \"entity\": [[\"tile_ic\", \"sp\", [-1, 3]], "
    "[\"tile_oc\", \"sp\", [-1, 4]], [\"tile_ow\", \"sp\", [-1, 64]], [\"unroll_kw\", \"ot\", "
    "true]]}, "
    "\"result\": [[1000000000.0], 7, 10.2, 1676344760.1], \"version\": 0.2, \"tvm_version\": "
    "\"0.10.0\"}\n";

TEST(AutoTvmLog, RealTvmLogImports) {
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_real"));
  std::istringstream in(kTvmLog);
  auto stats = tt::records::import_autotvm_log(*store, in, "tvm.log", kImport);
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
  ASSERT_TRUE(tt::records::import_autotvm_log(*a, in, "tvm.log", kImport).has_value());
  std::ostringstream exported;
  ASSERT_EQ(*tt::records::export_autotvm_log(*a, exported), 2);
  auto b = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_b"));
  std::istringstream again(exported.str());
  ASSERT_TRUE(tt::records::import_autotvm_log(*b, again, "export.log", kImport).has_value());
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
      {replace("\"result\": [[0.0045656413], 0,", "\"result\": [[0.0045656413], 12,"),
       "result[1]: error_no 12"},
      {replace("conv2d_NCHWc.x86", "conv2d_winograd.x86"),
       "task 'conv2d_winograd.x86' is not a template"},
      {replace("\"tile_ic\"", "\"tile_zz\""), "unknown knob 'tile_zz'"},
      {replace("[\"tile_oc\", \"sp\", [-1, 4]]", "[\"tile_oc\", \"sp\", [-1, 5]]"),
       "tile_oc value [-1, 5] is not one of"},
      {replace("[3, 3, 3, 3]", "[3, 3, 3]"), "pads = '3,3,3' needs 1, 2 or 4 values"},
      {replace("[64, 3, 7, 7]", "[64, 4, 7, 7]"), "does not fit data channels = 3"},
      {replace("[1, 3, 224, 224]", "[1, 3, 0, 224]"), "in_height = 0, must be > 0"},
      {replace("[[0.0045656413]", "[[-1.0]"), "cost -1.0 is not a non-negative number"},
      {good.substr(0, good.size() / 2), "not JSON"},
  };
  for (const BadLine& c : cases) {
    auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_bad"));
    std::istringstream in(good + "\n" + c.line + "\n");
    auto stats = tt::records::import_autotvm_log(*store, in, "tvm.log", kImport);
    ASSERT_FALSE(stats.has_value()) << c.fragment;
    EXPECT_NE(stats.error().message.find("tvm.log:2"), std::string::npos) << stats.error().message;
    EXPECT_NE(stats.error().message.find(c.fragment), std::string::npos) << stats.error().message;
    EXPECT_EQ(*store->result_count(), 0) << "a failed import wrote records";
  }
}

TEST(AutoTvmLog, ImportIntoExistingDbKeepsWhatWasThere) {
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_keep"));
  std::istringstream first(kTvmLog);
  ASSERT_TRUE(tt::records::import_autotvm_log(*store, first, "tvm.log", kImport).has_value());
  std::istringstream bad(std::string(kTvmLog) + "garbage\n");
  ASSERT_FALSE(tt::records::import_autotvm_log(*store, bad, "bad.log", kImport).has_value());
  EXPECT_EQ(*store->result_count(), 2);
}

// A log longer than the import's chunks (the staged rows are written 8,192 at a time while
// the next lines are read on another thread): every line lands, in order, the best-record
// tables agree with a full scan, the fastest is the brute-force minimum, and a bad last line
// still leaves nothing of the import behind.
TEST(AutoTvmLog, ALogOfManyChunksImportsWholeOrNotAtAll) {
  std::string first = std::string(kTvmLog).substr(std::string(kTvmLog).find('\n') + 1);
  std::string second = first.substr(first.find('\n') + 1);
  first = first.substr(0, first.find('\n'));
  second = second.substr(0, second.find('\n'));
  const auto with_cost = [](std::string line, const std::string& cost, double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9f", value);
    return line.replace(line.find(cost), cost.size(), text) + "\n";
  };
  const int kLines = 3 * 8192 + 517;
  std::string log;
  double fastest = 1;
  for (int i = 0; i < kLines; ++i) {
    // Costs that are not monotonic in the line number, so the best is found, not the first.
    const double cost = 0.001 + 1e-7 * ((i * 7919) % kLines);
    if (i % 5 == 4) {
      log += second + "\n";  // an error record: never best
    } else {
      log += with_cost(first, "0.0045656413", cost);
      fastest = std::min(fastest, cost);
    }
  }
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_chunks"));
  std::istringstream head(kTvmLog);  // some results before: the import's ids do not start at 1
  ASSERT_TRUE(tt::records::import_autotvm_log(*store, head, "tvm.log", kImport).has_value());
  std::istringstream in(log);
  auto stats = tt::records::import_autotvm_log(*store, in, "big.log", kImport);
  ASSERT_TRUE(stats.has_value()) << stats.error().message;
  EXPECT_EQ(stats->imported, kLines);
  EXPECT_EQ(*store->result_count(), kLines + 2);
  auto check = store->check_best_tables();
  ASSERT_TRUE(check.has_value());
  EXPECT_EQ(check->mismatches, 0) << (check->examples.empty() ? "" : check->examples[0]);
  auto best = *store->best_all();
  ASSERT_EQ(best.size(), 1u);
  EXPECT_NEAR(best[0].record.result.costs[0], fastest, 1e-12);
  EXPECT_EQ(best[0].measured, kLines + 2);
  auto all = *store->all_records();
  ASSERT_EQ(all.size(), static_cast<size_t>(kLines + 2));
  for (int i = 0; i < kLines; i += 997)  // in the log's order
    EXPECT_EQ(all[i + 2].result.error_no == ss::MeasureErrorNo::kNoError, i % 5 != 4) << i;

  std::istringstream bad(log + "garbage\n");
  auto refused = tt::records::import_autotvm_log(*store, bad, "bad.log", kImport);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("bad.log:" + std::to_string(kLines + 1)),
            std::string::npos)
      << refused.error().message;
  EXPECT_EQ(*store->result_count(), kLines + 2);
  EXPECT_EQ(store->check_best_tables()->mismatches, 0);
}

// The forms of older and other AutoTVM versions, written from RESEARCH.md 2.2's facts: a
// TopHub-era x86 line (every split factor written out, keyed target, knobs out of order), the
// same config in the newer -1 form, a 1x1 record with tile_oh, a dense_nopack record, and
// a conv2d_nchw.cuda record (AutoTVM's CUDA argument list has no layouts), and records of
// templates tensortune lacks (grouped, int8, CUDA winograd) in the same file.
const char* kConvArgs =
    "[[\"TENSOR\", [1, 3, 224, 224], \"float32\"], [\"TENSOR\", [64, 3, 7, 7], \"float32\"], [2, "
    "2], [3, 3, 3, 3], "
    "[1, 1], \"NCHW\", \"NCHW\", \"float32\"]";
const char* kCudaConvArgs =
    "[[\"TENSOR\", [1, 3, 224, 224], \"float32\"], [\"TENSOR\", [64, 3, 7, 7], \"float32\"], [2, "
    "2], [3, 3, 3, 3], [1, 1], \"float32\"]";
const char* k1x1Args =
    "[[\"TENSOR\", [1, 64, 56, 56], \"float32\"], [\"TENSOR\", [128, 64, 1, 1], \"float32\"], [2, "
    "2], [0, 0, 0, 0], "
    "[1, 1], \"NCHW\", \"NCHW\", \"float32\"]";

std::string line(const std::string& target, const std::string& task, const std::string& args,
                 const std::string& entity, double cost) {
  return "{\"input\": [\"" + target + "\", \"" + task + "\", " + args +
         ", {}], \"config\": {\"index\": 9, " + "\"code_hash\": null, \"entity\": " + entity +
         "}, \"result\": [[" + std::to_string(cost) +
         "], 0, 1.5, 1550000000.0], \"version\": 0.2, \"tvm_version\": \"0.6.dev\"}\n";
}

std::string mixed_log() {
  const std::string skx = "llvm -mcpu=skylake-avx512 -keys=cpu";
  return line(skx, "conv2d_NCHWc.x86", kConvArgs,
              "[[\"unroll_kw\", \"ot\", false], [\"tile_ic\", \"sp\", [1, 3]], [\"tile_oc\", "
              "\"sp\", [2, 32]], "
              "[\"tile_ow\", \"sp\", [14, 8]]]",
              0.002) +
         line("llvm -keys=cpu", "conv2d_NCHWc.x86", kConvArgs,
              "[[\"tile_ic\", \"sp\", [-1, 3]], [\"tile_oc\", \"sp\", [-1, 16]], [\"tile_ow\", "
              "\"sp\", [-1, 16]], "
              "[\"unroll_kw\", \"ot\", true]]",
              0.003) +
         line(skx, "conv2d_NCHWc.x86", k1x1Args,
              "[[\"tile_ic\", \"sp\", [4, 16]], [\"tile_oc\", \"sp\", [4, 32]], [\"tile_ow\", "
              "\"sp\", [4, 7]], "
              "[\"tile_oh\", \"ot\", 2]]",
              0.0004) +
         line(skx, "dense_nopack.x86",
              "[[\"TENSOR\", [1, 512], \"float32\"], [\"TENSOR\", [1000, 512], \"float32\"], null, "
              "\"float32\"]",
              "[[\"tile_y\", \"sp\", [1, 1]], [\"tile_x\", \"sp\", [250, 4]], [\"tile_k\", \"sp\", "
              "[32, 16]]]",
              0.0001) +
         line("cuda -keys=cuda,gpu -arch=sm_80", "conv2d_nchw.cuda", kCudaConvArgs,
              "[[\"tile_f\", \"sp\", [2, 2, 16, 1]], [\"tile_y\", \"sp\", [112, 1, 1, 1]], "
              "[\"tile_x\", \"sp\", "
              "[4, 1, 28, 1]], [\"tile_rc\", \"sp\", [3, 1]], [\"tile_rx\", \"sp\", [1, 7]], "
              "[\"tile_ry\", \"sp\", "
              "[7, 1]], [\"auto_unroll_max_step\", \"ot\", 512], [\"unroll_explicit\", \"ot\", 1]]",
              0.0001) +
         line(skx, "group_conv2d_nchw.x86", kConvArgs, "[[\"tile_ic\", \"sp\", [1, 3]]]", 0.001) +
         line(skx, "conv2d_NCHWc_int8.x86", kConvArgs, "[[\"tile_ic\", \"sp\", [1, 3]]]", 0.001) +
         line("cuda -model=titanx", "conv2d_nchw_int8.cuda", kCudaConvArgs,
              "[[\"tile_f\", \"sp\", [-1, 2, 16, 1]]]", 0.0002);
}

TEST(AutoTvmLog, EveryVersionsFormImportsAndUnsupportedTemplatesAreCountedOrRefused) {
  {
    auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_mixed_strict"));
    std::istringstream in(mixed_log());
    auto stats = tt::records::import_autotvm_log(*store, in, "tophub.log", import_options(""));
    ASSERT_FALSE(stats) << "all or nothing by default";
    EXPECT_NE(stats.error().message.find("tophub.log:6"), std::string::npos)
        << stats.error().message;
    EXPECT_NE(stats.error().message.find("group_conv2d_nchw.x86"), std::string::npos)
        << stats.error().message;
    EXPECT_EQ(stats.error().code, tt::ErrorCode::kUnimplemented);
    EXPECT_EQ(*store->result_count(), 0);
  }
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_mixed"));
  std::istringstream in(mixed_log());
  auto stats =
      tt::records::import_autotvm_log(*store, in, "tophub.log", import_options("", /*skip=*/true));
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->imported, 5);
  ASSERT_EQ(stats->skipped.size(), 3u);
  EXPECT_EQ(stats->skipped.at("conv2d_nchw_int8.cuda").count, 1);
  EXPECT_EQ(stats->skipped.at("group_conv2d_nchw.x86").count, 1);
  EXPECT_EQ(stats->skipped.at("conv2d_NCHWc_int8.x86").count, 1);
  EXPECT_NE(stats->skipped.at("conv2d_nchw_int8.cuda").reason.find("not a template"),
            std::string::npos);
  // Device keys from the targets: -model, a CUDA -arch, -mcpu, else the kind.
  EXPECT_EQ(stats->device_keys, (std::set<std::string>{"cuda-sm80", "llvm", "skylake-avx512"}));

  // Every record's entity is the canonical (-1 first) form of what the line said.
  auto all = *store->all_records();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].entity_json.find("[1,3]"), std::string::npos) << all[0].entity_json;
  auto entity = *tt::records::entity_from_json(all[0].entity_json);
  auto space = ss::conv2d_nchwc_space(ss::square_conv2d(3, 224, 64, 7, 2), 16);
  auto s = ss::conv2d_nchwc_schedule(space, *space.config_from_entity(entity));
  EXPECT_EQ(s.ic_bn, 3);
  EXPECT_EQ(s.oc_bn, 32);
  EXPECT_EQ(s.reg_n, 8);
  EXPECT_FALSE(s.unroll_kw);
  EXPECT_EQ(all[0].result.device_key, "skylake-avx512");
  EXPECT_EQ(all[1].result.device_key, "llvm");
  EXPECT_DOUBLE_EQ(all[2].result.costs.at(0), 0.0004);
  // The CUDA record: keyed by compute capability, its splits read with their outer factors.
  const auto cuda = std::find_if(all.begin(), all.end(), [](const auto& r) {
    return r.task.workload_key.find("conv2d_nchw.cuda") != std::string::npos;
  });
  ASSERT_NE(cuda, all.end());
  EXPECT_EQ(cuda->result.device_key, "cuda-sm80");
  const ss::Conv2dWorkload stem = ss::square_conv2d(3, 224, 64, 7, 2);
  const ss::ConfigSpace cuda_space = ss::conv2d_nchw_cuda_space(stem);
  const auto cuda_config =
      cuda_space.config_from_entity(*tt::records::entity_from_json(cuda->entity_json));
  ASSERT_TRUE(cuda_config.has_value()) << cuda_config.error().message;
  const auto cs = ss::conv2d_nchw_cuda_schedule(stem, cuda_space, *cuda_config);
  EXPECT_EQ(cs.f, (std::array<int64_t, 4>{2, 2, 16, 1}));
  EXPECT_EQ(cs.y, (std::array<int64_t, 4>{112, 1, 1, 1}));
  EXPECT_EQ(cs.x, (std::array<int64_t, 4>{4, 1, 28, 1}));
  // Its reduce splits come as tile_rx then tile_ry: by position (RESEARCH.md 2.4: in every
  // AutoTVM version the first is over KH), tile_rx [1, 7] splits KH and tile_ry [7, 1] KW.
  EXPECT_EQ(cs.ry, (std::array<int64_t, 2>{1, 7}));
  EXPECT_EQ(cs.rx, (std::array<int64_t, 2>{7, 1}));
  EXPECT_EQ(cs.auto_unroll_max_step, 512);

  // Export writes the -1 form; importing it again gives the same entities and costs.
  std::ostringstream exported;
  ASSERT_EQ(*tt::records::export_autotvm_log(*store, exported), 5);
  EXPECT_EQ(exported.str().find("[1,3]"), std::string::npos);
  EXPECT_NE(exported.str().find("[-1,3]"), std::string::npos) << exported.str();
  auto again = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_mixed_again"));
  std::istringstream back(exported.str());
  auto stats2 = tt::records::import_autotvm_log(*again, back, "export.log", import_options(""));
  ASSERT_TRUE(stats2) << stats2.error().message;
  auto all2 = *again->all_records();
  ASSERT_EQ(all2.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all2[i].entity_json, all[i].entity_json);
    EXPECT_EQ(all2[i].result.costs, all[i].result.costs);
    EXPECT_EQ(all2[i].result.device_key, all[i].result.device_key);
    EXPECT_EQ(all2[i].task.workload_key, all[i].task.workload_key);
  }
}

TEST(AutoTvmLog, SplitsThatDoNotSplitTheirAxisAreRefusedNamingLineAndKnob) {
  struct Case {
    std::string entity, fragment;
  };
  const std::vector<Case> cases = {
      {"[[\"tile_ic\", \"sp\", [2, 3]]]",
       "knob tile_ic split [2, 3] does not split its axis of length 3"},
      {"[[\"tile_oc\", \"sp\", [3, 32]]]",
       "knob tile_oc split [3, 32] does not split its axis of length 64 (the "
       "outermost factor would be 2)"},
      {"[[\"tile_oc\", \"sp\", [1, 0]]]", "knob tile_oc split [1, 0] does not split"},
      {"[[\"tile_ow\", \"sp\", [1, 4611686018427387904]]]", "knob tile_ow split"},
      {"[[\"tile_zz\", \"sp\", [1, 3]]]", "unknown knob 'tile_zz'"},
  };
  for (const Case& c : cases) {
    auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_split"));
    std::istringstream in(line("llvm", "conv2d_NCHWc.x86", kConvArgs, c.entity, 0.001));
    auto stats = tt::records::import_autotvm_log(*store, in, "old.log", import_options(""));
    ASSERT_FALSE(stats) << c.entity;
    EXPECT_NE(stats.error().message.find("old.log:1"), std::string::npos) << stats.error().message;
    EXPECT_NE(stats.error().message.find(c.fragment), std::string::npos) << stats.error().message;
    EXPECT_EQ(*store->result_count(), 0);
    // --skip-unsupported: the record is counted with the same reason, and the import goes on
    // to the next line.
    std::istringstream both(line("llvm", "conv2d_NCHWc.x86", kConvArgs, c.entity, 0.001) + "\n" +
                            std::string(kTvmLog));
    auto skipped =
        tt::records::import_autotvm_log(*store, both, "old.log", import_options("", true));
    ASSERT_TRUE(skipped) << skipped.error().message;
    EXPECT_EQ(skipped->imported, 2);
    const auto& s = skipped->skipped.at("conv2d_NCHWc.x86 (config)");
    EXPECT_EQ(s.count, 1);
    EXPECT_NE(s.reason.find("old.log:1"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find(c.fragment), std::string::npos) << s.reason;
  }
}

// TopHub's cuda_v0.10 log (the fallback of every TVM GPU build), as published: its 2018 records
// name the kernel-height split "tile_rx" and the width split "tile_ry". Every conv2d_nchw.cuda
// record decodes to the index AutoTVM wrote (an asymmetric 3x1 kernel was refused, and
// symmetric ones decoded to a transposed config, before the template read those names by
// position); the Winograd record decodes too.
TEST(AutoTvmLog, TopHubCudaRecordsDecodeToTheIndexAutoTvmWrote) {
  const std::string text = test_data("tophub_cuda_v0.10_head.log");
  ASSERT_FALSE(text.empty());
  std::istringstream lines(text);
  int checked = 0;
  for (std::string l; std::getline(lines, l);) {
    auto parsed = tt::records::parse_autotvm_line(l, 1);
    ASSERT_TRUE(parsed) << parsed.error().message;
    const ss::ConfigSpace space = *ss::make_config_space(parsed->task);
    auto config = space.config_from_entity(parsed->entity);
    ASSERT_TRUE(config) << l << "\n" << config.error().message;
    EXPECT_EQ(config->index, parsed->logged_index) << l;
    if (parsed->task.template_name != "conv2d_nchw.cuda") continue;
    // The kernel-height split is over KH: for the 3x1 kernel [1, 3], for the 1x3 one [1, 1].
    const auto& w = std::get<ss::Conv2dWorkload>(parsed->task.workload);
    const auto s = ss::conv2d_nchw_cuda_schedule(w, space, *config);
    EXPECT_EQ(s.ry[0] * s.ry[1], w.kernel_h) << l;
    EXPECT_EQ(s.rx[0] * s.rx[1], w.kernel_w) << l;
    ++checked;
  }
  EXPECT_EQ(checked, 8);

  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_tophub"));
  std::istringstream in(text);
  auto stats =
      tt::records::import_autotvm_log(*store, in, "cuda_v0.10.log", import_options("", true));
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->imported, 9);
  EXPECT_TRUE(stats->skipped.empty());
  EXPECT_EQ(stats->device_keys, (std::set<std::string>{"titanx"}));
}

TEST(AutoTvmLog, TargetStringsComeApart) {
  auto t = *tt::records::parse_target_string("llvm -mcpu=skylake-avx512 -keys=cpu,x86 -fast-math");
  EXPECT_EQ(t.kind, "llvm");
  EXPECT_EQ(t.keys, (std::vector<std::string>{"cpu", "x86"}));
  EXPECT_EQ(t.attrs.at("mcpu"), "skylake-avx512");
  EXPECT_EQ(t.attrs.at("fast-math"), "true");
  EXPECT_EQ(tt::records::device_key_from_target(t), "skylake-avx512");
  auto cuda = *tt::records::parse_target_string("cuda -model=titanx -mcpu=sm_52");
  EXPECT_EQ(tt::records::device_key_from_target(cuda), "titanx") << "-model goes before -mcpu";
  EXPECT_EQ(
      tt::records::device_key_from_target(*tt::records::parse_target_string("llvm -keys=cpu ")),
      "llvm");
  EXPECT_FALSE(tt::records::parse_target_string(""));
  EXPECT_FALSE(tt::records::parse_target_string("-mcpu=x"));
  EXPECT_FALSE(tt::records::parse_target_string("llvm mcpu"));
}

}  // namespace

// TLCBench's graph-tuned MobileNetV2 log for a Skylake-AVX512 server (2021): each distinct
// depthwise_conv2d_NCHWc.x86 record decodes, in our space, to the index AutoTVM wrote, with the
// layout blocks and row it names, and imports.
TEST(AutoTvmLog, TlcBenchDepthwiseRecordsDecodeToTheIndexAutoTvmWrote) {
  const std::string text = test_data("tlcbench_mobilenet_v2_depthwise.log");
  ASSERT_FALSE(text.empty());
  std::istringstream lines(text);
  int checked = 0;
  for (std::string l; std::getline(lines, l);) {
    auto parsed = tt::records::parse_autotvm_line(l, 1);
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->task.template_name, ss::kDepthwiseConv2dNCHWc);
    const auto& w = std::get<ss::Conv2dWorkload>(parsed->task.workload);
    EXPECT_TRUE(w.is_depthwise()) << l;
    const ss::ConfigSpace space = *ss::make_config_space(parsed->task);
    auto config = space.config_from_entity(parsed->entity);
    ASSERT_TRUE(config) << l << "\n" << config.error().message;
    EXPECT_EQ(config->index, parsed->logged_index) << l;
    const auto s = ss::depthwise_conv2d_nchwc_schedule(space, *config);
    EXPECT_EQ(s.ic_bn, s.oc_bn) << l;
    EXPECT_TRUE(s.ic_bn == 16 || s.ic_bn == 32) << l;
    ++checked;
  }
  EXPECT_EQ(checked, 10);

  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_tlcbench_dw"));
  std::istringstream in(text);
  auto stats = tt::records::import_autotvm_log(*store, in, "mobilenet_v2.graph.log",
                                               import_options("", false));
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->imported, 10);
}

// TopHub's cuda_v0.10 depthwise records (its Jetson Nano MobileNet layers, strides 1 and 2, as
// published): each decodes to the index AutoTVM wrote and imports.
TEST(AutoTvmLog, TopHubDepthwiseCudaRecordsDecodeToTheIndexAutoTvmWrote) {
  const std::string text = test_data("tophub_cuda_v0.10_depthwise.log");
  ASSERT_FALSE(text.empty());
  std::istringstream lines(text);
  int checked = 0;
  for (std::string l; std::getline(lines, l);) {
    auto parsed = tt::records::parse_autotvm_line(l, 1);
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->task.template_name, "depthwise_conv2d_nchw.cuda");
    const auto& w = std::get<ss::Conv2dWorkload>(parsed->task.workload);
    EXPECT_TRUE(w.is_depthwise()) << l;
    const ss::ConfigSpace space = *ss::make_config_space(parsed->task);
    auto config = space.config_from_entity(parsed->entity);
    ASSERT_TRUE(config) << l << "\n" << config.error().message;
    EXPECT_EQ(config->index, parsed->logged_index) << l;
    EXPECT_TRUE(space.is_valid(*config)) << l;
    ++checked;
  }
  EXPECT_EQ(checked, 18);

  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_tophub_dw"));
  std::istringstream in(text);
  auto stats =
      tt::records::import_autotvm_log(*store, in, "cuda_v0.10.log", import_options("", false));
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->imported, 18);
  EXPECT_EQ(stats->device_keys, (std::set<std::string>{"jetson-nano"}));
}

// TopHub's cuda_v0.10 Winograd records as published: TITAN X and 1080 Ti ones (2018, the outer
// tile_b factor written out) and V100 ones (2020, asymmetric padding, odd heights): each
// decodes to the index AutoTVM wrote, with the point count AutoTVM's tile rule gives (36 for
// F(4x4, 3x3) when the input height is a multiple of 8, else 16), and imports.
TEST(AutoTvmLog, TopHubWinogradCudaRecordsDecodeToTheIndexAutoTvmWrote) {
  const std::string text = test_data("tophub_cuda_v0.10_winograd.log");
  ASSERT_FALSE(text.empty());
  std::istringstream lines(text);
  int checked = 0, with_points = 0;
  for (std::string l; std::getline(lines, l);) {
    auto parsed = tt::records::parse_autotvm_line(l, 1);
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->task.template_name, "conv2d_nchw_winograd.cuda");
    const ss::ConfigSpace space = *ss::make_config_space(parsed->task);
    auto config = space.config_from_entity(parsed->entity);
    ASSERT_TRUE(config) << l << "\n" << config.error().message;
    EXPECT_EQ(config->index, parsed->logged_index) << l;
    const auto& w = std::get<ss::Conv2dWorkload>(parsed->task.workload);
    const auto s = ss::conv2d_nchw_winograd_cuda_schedule(w, space, *config);
    // The 2018 records write tile_b's outer factor: the points of their tile.
    const auto& b = std::get<std::vector<int64_t>>(parsed->entity[0].second);
    if (b[0] != -1) {
      EXPECT_EQ(b[0], s.points()) << l;
      ++with_points;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 14);
  EXPECT_EQ(with_points, 4);

  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_tophub_wino"));
  std::istringstream in(text);
  auto stats =
      tt::records::import_autotvm_log(*store, in, "cuda_v0.10.log", import_options("", false));
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->imported, 14);
  EXPECT_EQ(stats->device_keys, (std::set<std::string>{"titanx", "1080ti", "v100"}));
}

// The quirks of TopHub's cuda_v0.10 in one log, as a new user imports it: 2018 records (the
// outer factor written out, the kernel-height split named "tile_rx"), 2020 ones (-1 first,
// asymmetric padding), direct, Winograd and depthwise records of four GPUs, and a record of a
// template tensortune lacks. With --skip-unsupported every supported record imports and the
// other is counted under its template; a strict import fails whole, naming the line.
TEST(AutoTvmLog, TopHubCudaLogWithEveryQuirkImportsEverySupportedRecord) {
  std::string log;
  for (const char* name : {"tophub_cuda_v0.10_head.log", "tophub_cuda_v0.10_winograd.log",
                           "tophub_cuda_v0.10_depthwise.log"}) {
    const std::string text = test_data(name);
    ASSERT_FALSE(text.empty()) << name;
    log += text;
  }
  // TopHub's own line (V100, 2020) of a transposed convolution: no such template here.
  log +=
      "{\"input\": [\"cuda -model=v100\", \"conv2d_transpose_nchw.cuda\", [[\"TENSOR\", [1, 512, "
      "9, 4], \"float32\"], [\"TENSOR\", [512, 256, 3, 3], \"float32\"], [2, 2], [1, 1, 1, 1], "
      "\"float32\", [1, 1]], {}], \"config\": {\"index\": 41477299, \"code_hash\": null, "
      "\"entity\": [[\"tile_n\", \"sp\", [-1, 1, 1, 1]], [\"tile_f\", \"sp\", [-1, 1, 4, 4]], "
      "[\"tile_y\", \"sp\", [-1, 1, 18, 1]], [\"tile_x\", \"sp\", [-1, 1, 2, 1]], [\"tile_rc\", "
      "\"sp\", [-1, 32, 16]], [\"auto_unroll_max_step\", \"ot\", 1500], [\"unroll_explicit\", "
      "\"ot\", 1], [\"fuse_yx\", \"ot\", 0]]}, \"result\": [[0.0001528748234920635], 0, "
      "3.315305233001709, 1600620393.072879], \"version\": 0.2, \"tvm_version\": \"0.7.dev1\"}\n";
  {
    auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_tophub_strict"));
    std::istringstream in(log);
    auto stats = tt::records::import_autotvm_log(*store, in, "cuda_v0.10.log", import_options(""));
    ASSERT_FALSE(stats);
    EXPECT_NE(stats.error().message.find("cuda_v0.10.log:42"), std::string::npos)
        << stats.error().message;
    EXPECT_EQ(*store->result_count(), 0);
  }
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_tophub_all"));
  std::istringstream in(log);
  auto stats =
      tt::records::import_autotvm_log(*store, in, "cuda_v0.10.log", import_options("", true));
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->imported, 9 + 14 + 18);
  ASSERT_EQ(stats->skipped.size(), 1u);
  EXPECT_EQ(stats->skipped.at("conv2d_transpose_nchw.cuda").count, 1);
  EXPECT_EQ(stats->device_keys, (std::set<std::string>{"titanx", "1080ti", "v100", "jetson-nano"}));
}

// A batch_matmul.cuda line as AutoTVM writes it (x, y as (B, N, K), transpose_b) imports for the
// CUDA target, decodes to the tiles and unroll knobs it names, and its index is AutoTVM's mixed
// radix over the five knobs in AutoTVM's order (tile_y fastest).
TEST(AutoTvmLog, BatchMatmulCudaLinesImportWithAutoTvmsIndex) {
  const std::string target = "cuda -keys=cuda,gpu -arch=sm_80 -max_num_threads=1024";
  const std::string log =
      line(target, "batch_matmul.cuda",
           "[[\"TENSOR\", [12, 128, 64], \"float32\"], [\"TENSOR\", [12, 96, 64], \"float32\"], "
           "[12, 128, 96], \"float32\", false, true]",
           "[[\"tile_y\", \"sp\", [-1, 8, 4]], [\"tile_x\", \"sp\", [-1, 16, 2]], [\"tile_k\", "
           "\"sp\", [-1, 16]], [\"auto_unroll_max_step\", \"ot\", 32], [\"unroll_explicit\", "
           "\"ot\", 1]]",
           0.0001);
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_batch_matmul_cuda"));
  std::istringstream in(log);
  auto stats =
      tt::records::import_autotvm_log(*store, in, "bmm_cuda.log", import_options("", false));
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->imported, 1);
  auto all = *store->all_records();
  ASSERT_EQ(all.size(), 1u);
  const ss::BatchMatmulWorkload nt{12, 128, 96, 64, true};
  const ss::Target cuda{ss::cuda_target_spec(80), 1};
  EXPECT_EQ(all[0].task.workload_key,
            ss::workload_key(*ss::make_task(ss::kBatchMatmulCuda, nt, cuda)));
  auto task = tt::records::task_from_workload_key(all[0].task.workload_key, cuda.spec, 1);
  ASSERT_TRUE(task) << task.error().message;
  auto space = *ss::make_config_space(*task);
  auto config = space.config_from_entity(*tt::records::entity_from_json(all[0].entity_json));
  ASSERT_TRUE(config) << config.error().message;
  const auto s = ss::batch_matmul_cuda_schedule(nt, space, *config);
  EXPECT_EQ(s.y, (std::array<int64_t, 3>{4, 8, 4}));
  EXPECT_EQ(s.x, (std::array<int64_t, 3>{3, 16, 2}));
  EXPECT_EQ(s.k, (std::array<int64_t, 2>{4, 16}));
  EXPECT_EQ(s.auto_unroll_max_step, 32);
  EXPECT_TRUE(s.unroll_explicit);
  const auto& k = space.knobs();
  auto at = [&](size_t knob, const ss::KnobValue& v) {
    const auto& o = k[knob].options;
    return static_cast<int64_t>(std::find(o.begin(), o.end(), v) - o.begin());
  };
  const int64_t y = at(0, std::vector<int64_t>{-1, 8, 4}),
                x = at(1, std::vector<int64_t>{-1, 16, 2}),
                kk = at(2, std::vector<int64_t>{-1, 16});
  const int64_t ny = k[0].options.size(), nx = k[1].options.size(), nk = k[2].options.size();
  EXPECT_EQ(config->index, y + ny * (x + nx * (kk + nk * (2 + 4 * 1))));
}

// dense_tensorcore.cuda lines (float16 operands, AutoTVM's nine knobs) import as float16 tasks
// of the template, their entities decoding to AutoTVM's index (the first knob fastest); a
// float32 task of the same shape is another workload, and mixed operand dtypes are refused.
TEST(AutoTvmLog, DenseTensorcoreLinesImportAsFloat16TasksWithAutoTvmsIndex) {
  const std::string target = "cuda -keys=cuda,gpu -arch=sm_80 -max_num_threads=1024";
  const std::string entity =
      "[[\"block_row_warps\", \"ot\", 2], [\"block_col_warps\", \"ot\", 4], "
      "[\"warp_row_tiles\", \"ot\", 1], [\"warp_col_tiles\", \"ot\", 2], [\"chunk\", \"ot\", 4], "
      "[\"offset\", \"ot\", 8], [\"offsetCS\", \"ot\", 0], [\"vec\", \"ot\", 8], "
      "[\"wmma_m\", \"ot\", 16]]";
  const std::string log =
      line(target, "dense_tensorcore.cuda",
           "[[\"TENSOR\", [64, 128], \"float16\"], [\"TENSOR\", [256, 128], \"float16\"], null, "
           "\"float16\"]",
           entity, 0.00002);
  auto parsed = tt::records::parse_autotvm_line(log, 1);
  ASSERT_TRUE(parsed) << parsed.error().message;
  const auto& d = std::get<ss::DenseWorkload>(parsed->task.workload);
  EXPECT_EQ(d, (ss::DenseWorkload{64, 256, 128, ss::Precision::kFloat16}));
  auto space = *ss::make_config_space(parsed->task);
  auto config = space.config_from_entity(parsed->entity);
  ASSERT_TRUE(config) << config.error().message;
  // brw 2 (digit 1), bcw 4 (2), wrt 1 (0), wct 2 (1), chunk 4 (2), offset 8 (1), offsetCS 0,
  // vec 8 (3), wmma_m 16 of [32, 16, 8] (1).
  EXPECT_EQ(config->index, 1 + 3 * 2 + 27 * 1 + 81 * 2 + 324 * 1 + 1296 * 3 + 5184 * 1);
  const ss::Target cuda{ss::cuda_target_spec(80), 1};
  EXPECT_NE(ss::workload_key(parsed->task),
            ss::workload_key(
                *ss::make_task("dense_large_batch.gpu", ss::DenseWorkload{64, 256, 128}, cuda)));
  // The key round-trips: the stored task is the parsed one.
  auto again = tt::records::task_from_workload_key(ss::workload_key(parsed->task), cuda.spec, 1);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(std::get<ss::DenseWorkload>(again->workload), d);
  const std::string mixed =
      line(target, "dense_tensorcore.cuda",
           "[[\"TENSOR\", [64, 128], \"float16\"], [\"TENSOR\", [256, 128], \"float32\"], null, "
           "\"float16\"]",
           entity, 0.00002);
  auto refused = tt::records::parse_autotvm_line(mixed, 1);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("\"float32\""), std::string::npos)
      << refused.error().message;
}

// batch_matmul.x86 lines in the argument lists of TVM since 0.8 (x, y, out_shape, out_dtype,
// transpose_a, transpose_b) and of older TVM (x, y, out_shape; y as (B, N, K)) import as the
// tasks tensortune extracts, and their entities decode to the tiles they name.
TEST(AutoTvmLog, BatchMatmulLinesOfBothArgumentListsImport) {
  const std::string target = "llvm -keys=cpu -mcpu=skylake-avx512";
  const std::string entity =
      "[[\"tile_y\", \"sp\", [-1, 8]], [\"tile_x\", \"sp\", [-1, 16]], [\"tile_k\", \"sp\", [-1, "
      "4]]]";
  const std::string log =
      line(target, "batch_matmul.x86",
           "[[\"TENSOR\", [12, 128, 64], \"float32\"], [\"TENSOR\", [12, 64, 128], \"float32\"], "
           "null, \"float32\", false, false]",
           entity, 0.001) +
      line(target, "batch_matmul.x86",
           "[[\"TENSOR\", [12, 128, 64], \"float32\"], [\"TENSOR\", [12, 128, 64], \"float32\"], "
           "null]",
           entity, 0.002) +
      line(target, "batch_matmul.x86",
           "[[\"TENSOR\", [12, 128, 64], \"float32\"], [\"TENSOR\", [12, 128, 64], \"float32\"], "
           "null, \"float32\", true, true]",
           entity, 0.003);
  auto store = *tt::records::RecordStore::open(tt::testing::fresh_db_path("log_batch_matmul"));
  std::istringstream in(log);
  auto stats =
      tt::records::import_autotvm_log(*store, in, "bmm.log", import_options("", /*skip=*/true));
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->imported, 2);
  ASSERT_EQ(stats->skipped.count("batch_matmul.x86"), 1u);
  EXPECT_NE(stats->skipped.at("batch_matmul.x86").reason.find("transpose_a"), std::string::npos)
      << stats->skipped.at("batch_matmul.x86").reason;

  auto all = *store->all_records();
  ASSERT_EQ(all.size(), 2u);
  const ss::Target host{target, 16};
  const ss::BatchMatmulWorkload nn{12, 128, 128, 64, false}, nt{12, 128, 128, 64, true};
  EXPECT_EQ(all[0].task.workload_key,
            ss::workload_key(*ss::make_task(ss::kBatchMatmulX86, nn, host)));
  EXPECT_EQ(all[1].task.workload_key,
            ss::workload_key(*ss::make_task(ss::kBatchMatmulX86, nt, host)));
  for (const auto& r : all) {
    auto task = tt::records::task_from_workload_key(r.task.workload_key, target, 16);
    ASSERT_TRUE(task) << task.error().message;
    auto space = *ss::make_config_space(*task);
    auto config = space.config_from_entity(*tt::records::entity_from_json(r.entity_json));
    ASSERT_TRUE(config) << config.error().message;
    const auto s = ss::batch_matmul_schedule(space, *config);
    EXPECT_EQ(s.yi, 8);
    EXPECT_EQ(s.xi, 16);
    EXPECT_EQ(s.kf, 4);
    // AutoTVM's index: the first knob varies fastest, over the divisors of each axis.
    const int64_t y_options = 8, x_options = 8;  // divisors of 128
    EXPECT_EQ(config->index, 3 + y_options * (4 + x_options * 2));
  }
}
