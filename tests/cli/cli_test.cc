// The tensortune binary, run as a user runs it: a correct `op run` against the reference, and
// every bad input of the foundation issue answered with a clear message and exit code 1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/measure/reference_ops.h"
#include "support/npy.h"
#include "tests/cli/run_binary.h"

namespace tt = tensortune;
namespace fs = std::filesystem;

namespace {

using tensortune::testing::CmdResult;
CmdResult run(const std::string& args) { return tensortune::testing::run_tensortune(args); }

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tt_cli_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void expect_error(const std::string& args, const std::string& fragment) {
    CmdResult r = run(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(fragment), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  }
  fs::path dir_;
};

const std::string kTune = "tune-op --op conv2d_NCHWc --trials 1 ";

TEST_F(CliTest, OpRunMatchesReferenceWithAsymmetricPadding) {
  tt::Tensor x = tt::Tensor::zeros({1, 8, 9, 10});
  tt::Tensor w = tt::Tensor::zeros({16, 8, 3, 3});
  tt::Tensor b = tt::Tensor::zeros({16});
  tt::fill_uniform(x, 1);
  tt::fill_uniform(w, 2);
  tt::fill_uniform(b, 3);
  ASSERT_TRUE(tt::write_npy(path("x.npy"), x).has_value());
  ASSERT_TRUE(tt::write_npy(path("w.npy"), w).has_value());
  ASSERT_TRUE(tt::write_npy(path("b.npy"), b).has_value());
  CmdResult r = run("op run --op conv2d_NCHWc --data " + path("x.npy") + " --weight " +
                    path("w.npy") + " --bias " + path("b.npy") +
                    " --strides 2,2 --pads 0,1,1,1 --dilation 1,1 --out " + path("y.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("default config"), std::string::npos) << r.output;
  auto y = tt::read_npy(path("y.npy"));
  ASSERT_TRUE(y.has_value());
  tt::schedule_space::Conv2dWorkload wl;
  wl.in_channels = 8;
  wl.in_height = 9;
  wl.in_width = 10;
  wl.out_channels = 16;
  wl.kernel_h = wl.kernel_w = 3;
  wl.stride_h = wl.stride_w = 2;
  wl.pad_top = 0;
  wl.pad_left = wl.pad_bottom = wl.pad_right = 1;
  const tt::Tensor want = tt::measure::conv2d_nchw_reference(x, w, &b, wl);
  // Hand-computed: OH = (9 + 0 + 1 - 3) / 2 + 1 = 4, OW = (10 + 1 + 1 - 3) / 2 + 1 = 5.
  EXPECT_EQ(y->shape, (std::vector<int64_t>{1, 16, 4, 5}));
  ASSERT_EQ(y->shape, want.shape);
  for (size_t i = 0; i < want.f32.size(); ++i)
    EXPECT_NEAR(y->f32[i], want.f32[i], 1e-4 * (1 + std::fabs(want.f32[i])));
}

// --print-source shows the kernel that runs: LLVM IR for a CPU template (the vector
// multiply-adds of the config's channel block), CUDA C with its launch for a GPU one.
TEST_F(CliTest, OpRunPrintsTheKernelItRuns) {
  tt::Tensor x = tt::Tensor::zeros({1, 8, 6, 6});
  tt::Tensor w = tt::Tensor::zeros({16, 8, 3, 3});
  tt::fill_uniform(x, 1);
  tt::fill_uniform(w, 2);
  ASSERT_TRUE(tt::write_npy(path("x.npy"), x).has_value());
  ASSERT_TRUE(tt::write_npy(path("w.npy"), w).has_value());
  const std::string args = "op run --op conv2d --data " + path("x.npy") + " --weight " +
                           path("w.npy") + " --pads 1 --print-source --out " + path("y.npy");
  CmdResult cpu = run(args);
  ASSERT_EQ(cpu.exit_code, 0) << cpu.output;
  EXPECT_NE(cpu.output.find("define "), std::string::npos) << cpu.output;
  EXPECT_NE(cpu.output.find("@kernel("), std::string::npos) << cpu.output;
  EXPECT_NE(cpu.output.find(" x float>"), std::string::npos) << cpu.output;
  CmdResult gpu = run(args + " --target cuda-sm90 --emulate");
  ASSERT_EQ(gpu.exit_code, 0) << gpu.output;
  EXPECT_NE(gpu.output.find("__global__"), std::string::npos) << gpu.output;
  EXPECT_NE(gpu.output.find("// grid ("), std::string::npos) << gpu.output;
}

// The GPU template's kernel, emulated on the CPU, through the same command with --target cuda.
TEST_F(CliTest, OpRunEmulatesTheCudaKernelAndMatchesTheReference) {
  tt::Tensor x = tt::Tensor::zeros({2, 5, 7, 9});
  tt::Tensor w = tt::Tensor::zeros({6, 5, 3, 3});
  tt::Tensor b = tt::Tensor::zeros({6});
  tt::fill_uniform(x, 4);
  tt::fill_uniform(w, 5);
  tt::fill_uniform(b, 6);
  ASSERT_TRUE(tt::write_npy(path("x.npy"), x).has_value());
  ASSERT_TRUE(tt::write_npy(path("w.npy"), w).has_value());
  ASSERT_TRUE(tt::write_npy(path("b.npy"), b).has_value());
  const std::string args = "op run --op conv2d --data " + path("x.npy") + " --weight " +
                           path("w.npy") + " --bias " + path("b.npy") +
                           " --pads 1,0,1,2 --relu --out " + path("y.npy");
  CmdResult r = run(args + " --target cuda-sm90 --emulate");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("conv2d_nchw.cuda"), std::string::npos) << r.output;
  auto y = tt::read_npy(path("y.npy"));
  ASSERT_TRUE(y.has_value());
  auto wl = tt::schedule_space::conv2d_workload(x.shape, w.shape, {1, 1}, {1, 0, 1, 2}, {1, 1});
  ASSERT_TRUE(wl.has_value());
  tt::Tensor want = tt::measure::conv2d_nchw_reference(x, w, &b, *wl);
  for (float& v : want.f32) v = std::max(v, 0.0f);
  ASSERT_EQ(y->shape, want.shape);
  for (size_t i = 0; i < want.f32.size(); ++i)
    EXPECT_NEAR(y->f32[i], want.f32[i], 1e-4 * (1 + std::fabs(want.f32[i])));

  // Without --emulate the kernel runs on GPU 0; where there is none, the reason and the way out.
  CmdResult gpu = run(args + " --target cuda");
  if (gpu.exit_code != 0) {
    EXPECT_EQ(gpu.exit_code, 1) << gpu.output;
    EXPECT_NE(gpu.output.find("--emulate runs the generated kernel on this CPU"), std::string::npos)
        << gpu.output;
  }
  expect_error(args + " --emulate", "is a CPU template (use --target cuda)");
  expect_error(args + " --target cuda-sm9 --emulate", "needs a compute capability");
  expect_error("op run --op conv2d_nchw --data " + path("x.npy") + " --weight " + path("w.npy") +
                   " --out " + path("y.npy"),
               "is a cuda template; it needs --target cuda");
  CmdResult tune =
      run("tune-op --target cuda --op conv2d --data 1x8x8x8 --kernel 8x8x3x3 --trials 2 --db " +
          path("t.db"));
  if (tune.exit_code != 0) {  // no GPU here: the reason, not a crash
    EXPECT_EQ(tune.exit_code, 1) << tune.output;
    EXPECT_TRUE(tune.output.find("CUDA driver") != std::string::npos ||
                tune.output.find("no CUDA support") != std::string::npos)
        << tune.output;
  }
}

// An AutoTVM CUDA log's record is imported under cuda-sm80 and `op run --target cuda-sm80` uses
// it: its config runs (emulated) and matches the reference.
TEST_F(CliTest, AnImportedAutoTvmCudaRecordIsTheConfigOpRunUses) {
  tt::Tensor x = tt::Tensor::zeros({1, 8, 8, 8});
  tt::Tensor w = tt::Tensor::zeros({16, 8, 3, 3});
  tt::fill_uniform(x, 7);
  tt::fill_uniform(w, 8);
  ASSERT_TRUE(tt::write_npy(path("x.npy"), x).has_value());
  ASSERT_TRUE(tt::write_npy(path("w.npy"), w).has_value());
  {
    std::ofstream log(path("cuda.log"));
    log << R"({"input": ["cuda -keys=cuda,gpu -arch=sm_80 -max_num_threads=1024", )"
           R"("conv2d_nchw.cuda", [["TENSOR", [1, 8, 8, 8], "float32"], )"
           R"(["TENSOR", [16, 8, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"], {}], )"
           R"("config": {"index": 0, "code_hash": null, "entity": [["tile_f", "sp", [-1, 2, 4, 2]], )"
           R"(["tile_y", "sp", [-1, 1, 4, 2]], ["tile_x", "sp", [-1, 2, 4, 1]], )"
           R"(["tile_rc", "sp", [-1, 4]], ["tile_ry", "sp", [-1, 3]], ["tile_rx", "sp", [-1, 1]], )"
           R"(["auto_unroll_max_step", "ot", 512], ["unroll_explicit", "ot", 1]]}, )"
           R"("result": [[2e-05], 0, 1.5, 1700000000.0], "version": 0.2, "tvm_version": "0.8.0"})"
        << "\n";
  }
  CmdResult imp = run("records import --db " + path("gpu.db") + " " + path("cuda.log"));
  ASSERT_EQ(imp.exit_code, 0) << imp.output;
  CmdResult r =
      run("op run --target cuda-sm80 --emulate --op conv2d --data " + path("x.npy") + " --weight " +
          path("w.npy") + " --pads 1 --db " + path("gpu.db") + " --out " + path("y.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("using the best record in"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tile_f=[-1, 2, 4, 2]"), std::string::npos) << r.output;
  auto y = tt::read_npy(path("y.npy"));
  ASSERT_TRUE(y.has_value());
  auto wl = tt::schedule_space::conv2d_workload(x.shape, w.shape, {1, 1}, {1, 1, 1, 1}, {1, 1});
  const tt::Tensor want = tt::measure::conv2d_nchw_reference(x, w, nullptr, *wl);
  ASSERT_EQ(y->shape, want.shape);
  for (size_t i = 0; i < want.f32.size(); ++i)
    EXPECT_NEAR(y->f32[i], want.f32[i], 1e-4 * (1 + std::fabs(want.f32[i])));
  // Another compute capability has no record: the default config, said so.
  CmdResult other =
      run("op run --target cuda-sm90 --emulate --op conv2d --data " + path("x.npy") + " --weight " +
          path("w.npy") + " --pads 1 --db " + path("gpu.db") + " --out " + path("y2.npy"));
  ASSERT_EQ(other.exit_code, 0) << other.output;
  EXPECT_NE(other.output.find("has no record for this workload on cuda-sm90"), std::string::npos)
      << other.output;
}

// A GPU device server checks its GPUs before it dials the tracker: where there is none (or no
// such ordinal), it exits with the reason.
TEST_F(CliTest, GpuDeviceServerNamesWhyItCannotStart) {
  CmdResult r = run("device --tracker 127.0.0.1:1 --gpus 0,63");
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--gpus"), std::string::npos) << r.output;
  EXPECT_TRUE(r.output.find("CUDA driver") != std::string::npos ||
              r.output.find("GPU 63 does not exist") != std::string::npos ||
              r.output.find("no CUDA support") != std::string::npos)
      << r.output;
  expect_error("device --tracker 127.0.0.1:1", "--key is required");
  // `gpus` answers either way: the GPUs with their keys, or the reason there are none.
  CmdResult g = run("gpus");
  ASSERT_EQ(g.exit_code, 0) << g.output;
  EXPECT_TRUE(g.output.find("cuda-sm") != std::string::npos ||
              g.output.find("no GPU") != std::string::npos)
      << g.output;
}

TEST_F(CliTest, BadShapesAndParameters) {
  const std::string db = " --db " + path("t.db");
  expect_error(kTune + "--data 1x64x0x56 --kernel 64x64x3x3" + db,
               "--data = '1x64x0x56': dimension 0 must be > 0");
  expect_error(kTune + "--data 1x-64x56x56 --kernel 64x64x3x3" + db, "dimension -64 must be > 0");
  expect_error(kTune + "--data 1x64x56x56 --kernel 64x64x3x3 --strides 0,1" + db,
               "stride_h = 0, must be > 0");
  expect_error(kTune + "--data 1x3x4x4 --kernel 8x3x7x7" + db,
               "dilated kernel height 7 is larger than the padded input height 4");
  expect_error(kTune + "--data 1x3x8x8 --kernel 8x4x3x3" + db,
               "kernel shape (8,4,3,3) does not fit data channels = 3");
  expect_error(kTune + "--data 1x3x8x8 --kernel 8x3x3x3 --pads 1,1,-1,1" + db,
               "pad_bottom = -1, must be >= 0");
  expect_error(kTune + "--data 1x3x8x8 --kernel 8x3x3x3 --pads 1,1,1" + db,
               "pads = '1,1,1' needs 1, 2 or 4 values");
  expect_error("tune-op --op pointwise --data 1x3x8x8 --kernel 8x3x3x3" + db,
               "--op = 'pointwise' is not one of");
  expect_error("tune-op --op winograd --data 1x8x8x8 --kernel 8x8x3x3 --strides 2,2" + db,
               "serves 3x3 stride-1 undilated convolutions; this stride is 2,2");
  expect_error("tune-op --op dense --data 1x64 --weight 10x32" + db,
               "weight in_features = 32 does not match data in_features = 64");
}

TEST_F(CliTest, DbThatIsNotADbIsRefusedAndKept) {
  { std::ofstream(path("notes.db")) << "my precious notes\n"; }
  expect_error(kTune + "--data 1x3x8x8 --kernel 8x3x3x3 --db " + path("notes.db"),
               "is not a tensortune database");
  std::ifstream in(path("notes.db"));
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "my precious notes\n");
}

TEST_F(CliTest, TruncatedNpyConfigIndexAndMalformedLog) {
  tt::Tensor x = tt::Tensor::zeros({1, 4, 6, 6});
  tt::Tensor w = tt::Tensor::zeros({8, 4, 3, 3});
  std::string bytes = tt::serialize_npy(x);
  { std::ofstream(path("x.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 10); }
  ASSERT_TRUE(tt::write_npy(path("w.npy"), w).has_value());
  const std::string common = "op run --op conv2d_NCHWc --weight " + path("w.npy") +
                             " --pads 1,1,1,1 --out " + path("y.npy");
  expect_error(common + " --data " + path("x.npy"), "data is truncated");
  ASSERT_TRUE(tt::write_npy(path("x.npy"), x).has_value());
  expect_error(common + " --data " + path("x.npy") + " --config-index 99999999",
               "config index 99999999 is outside the space");
  { std::ofstream(path("bad.log")) << "{\"input\": [\"llvm\", \"conv2d_NCHWc.x86\"\n"; }
  expect_error("records import --db " + path("t.db") + " " + path("bad.log"),
               "bad.log:1: not JSON");
}

/// The cost lists of every record in the DB, as `records export` writes them (AutoTVM's log
/// lines: "result": [[costs...], error_no, all_cost, timestamp]).
std::vector<size_t> exported_cost_counts(const std::string& db) {
  CmdResult r = run("records export --db " + db);
  std::vector<size_t> counts;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    counts.push_back(nlohmann::json::parse(line).at("result").at(0).size());
  }
  return counts;
}

TEST_F(CliTest, FlushCacheTimesColdRunsUnlessTheTimingIsGiven) {
  const std::string tune =
      "tune-op --op dense --data 1x64 --weight 32x64 --trials 2 --flush-cache ";
  // Alone, --flush-cache implies --number 1 --min-repeat-ms 0 --repeat 10: ten cold rounds,
  // of which the fastest and slowest are dropped.
  CmdResult implied = run(tune + "--db " + path("implied.db"));
  ASSERT_EQ(implied.exit_code, 0) << implied.output;
  EXPECT_EQ(exported_cost_counts(path("implied.db")), (std::vector<size_t>{8, 8}));
  // What the user gives stays: three rounds keep one.
  CmdResult given = run(tune + "--repeat 3 --db " + path("given.db"));
  ASSERT_EQ(given.exit_code, 0) << given.output;
  EXPECT_EQ(exported_cost_counts(path("given.db")), (std::vector<size_t>{1, 1}));
  // Without the flag the defaults are AutoTVM's: three rounds.
  CmdResult warm =
      run("tune-op --op dense --data 1x64 --weight 32x64 --trials 2 "
          "--min-repeat-ms 1 --db " +
          path("warm.db"));
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  EXPECT_EQ(exported_cost_counts(path("warm.db")), (std::vector<size_t>{1, 1}));
}

TEST_F(CliTest, TuneOpRecordsAndResumes) {
  const std::string args =
      "tune-op --op dense --data 1x64 --weight 32x64 --trials 6 --batch-size 3 --min-repeat-ms 1 "
      "--db " +
      path("d.db");
  CmdResult first = run(args);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("[Task  1/ 1] Current/Best:"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("Progress: (6/6)"), std::string::npos) << first.output;
  CmdResult again = run(args);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("resumed: 6 trials of run random-seed0 were already in the DB"),
            std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("measured 0 configs"), std::string::npos) << again.output;
  // Another seed is another run: its own budget, and it skips what the first run measured.
  CmdResult other = run(args + " --seed 1");
  ASSERT_EQ(other.exit_code, 0) << other.output;
  EXPECT_NE(other.output.find("measured 6 configs"), std::string::npos) << other.output;
  CmdResult best = run("records best --json --db " + path("d.db"));
  ASSERT_EQ(best.exit_code, 0);
  EXPECT_NE(best.output.find("\"measured\": 12"), std::string::npos) << best.output;
  // Filters: by template (name or op name), by shape, by device key; no match is not an error.
  for (const char* filter : {"--template dense_pack", "--template dense_pack.x86",
                             "--workload 1x64", "--workload 32x64"}) {
    CmdResult hit = run("records best --db " + path("d.db") + " " + filter);
    ASSERT_EQ(hit.exit_code, 0) << filter << hit.output;
    EXPECT_NE(hit.output.find("dense 1x64 w32x64"), std::string::npos) << filter << hit.output;
  }
  for (const char* filter : {"--template conv2d_NCHWc", "--workload 1x65", "--workload 64x3x3",
                             "--device-key cuda-sm80"}) {
    CmdResult miss = run("records best --db " + path("d.db") + " " + filter);
    ASSERT_EQ(miss.exit_code, 0) << filter << miss.output;
    EXPECT_EQ(miss.output.find("dense 1x64"), std::string::npos) << filter << miss.output;
    EXPECT_NE(miss.output.find("matches the filters"), std::string::npos) << filter << miss.output;
  }
  // --jsonl with a filter streams one object a line: the k fastest, fastest first.
  CmdResult lines =
      run("records best --jsonl --top-k 3 --template dense_pack --db " + path("d.db"));
  ASSERT_EQ(lines.exit_code, 0) << lines.output;
  std::vector<double> costs;
  std::istringstream in(lines.output);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    const auto j = nlohmann::json::parse(line);
    costs.push_back(j.at("mean_cost_s").get<double>());
  }
  ASSERT_EQ(costs.size(), 3u) << lines.output;
  EXPECT_TRUE(std::is_sorted(costs.begin(), costs.end())) << lines.output;
  CmdResult none = run("records best --jsonl --template conv2d_NCHWc --db " + path("d.db"));
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_NE(none.output.find("matches the filters"), std::string::npos) << none.output;
  expect_error("records best --db " + path("d.db") + " --workload 1x64y", "--workload = '1x64y'");
  expect_error("records best --db " + path("missing.db"), "does not exist");
  CmdResult stats = run("records stats --db " + path("d.db"));
  ASSERT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("results      12 (0 failed)"), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("dense_pack.x86"), std::string::npos) << stats.output;
  CmdResult stats_json = run("records stats --json --db " + path("d.db"));
  ASSERT_EQ(stats_json.exit_code, 0) << stats_json.output;
  EXPECT_NE(stats_json.output.find("\"results\": 12"), std::string::npos) << stats_json.output;
  CmdResult plot = run("records plot --db " + path("d.db") + " -o " + path("curves.svg"));
  ASSERT_EQ(plot.exit_code, 0) << plot.output;
  EXPECT_NE(plot.output.find("2 curves"), std::string::npos) << plot.output;
  expect_error("records plot --db " + path("d.db") + " -o " + path("curves.gif"),
               "must end in .svg or .png");
  // Transfer learning for a conv task from a DB holding only dense records is refused.
  expect_error(
      kTune + "--data 1x8x8x8 --kernel 8x8x3x3 --tuner xgb --transfer --db " + path("d.db"),
      "no records of other conv2d_NCHWc.x86 workloads");
  CmdResult zero =
      run("tune-op --op dense --data 1x64 --weight 32x64 --trials 0 --db " + path("d.db"));
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_NE(zero.output.find("--trials = 0, must be >= 1"), std::string::npos) << zero.output;
  CmdResult tuner =
      run("tune-op --op dense --data 1x64 --weight 32x64 --tuner annealing --db " + path("d.db"));
  EXPECT_EQ(tuner.exit_code, 2) << tuner.output;
  EXPECT_NE(tuner.output.find("annealing"), std::string::npos) << tuner.output;
}

}  // namespace
