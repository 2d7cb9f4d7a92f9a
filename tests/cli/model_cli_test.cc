// The whole-model commands as a user runs them: tasks, inspect, compile, run (compiled and
// --reference), bench --profile, export-onnx, and their errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "support/image_io.h"
#include "support/npy.h"
#include "tests/cli/run_binary.h"

namespace fs = std::filesystem;

namespace {

using tensortune::testing::CmdResult;
CmdResult run(const std::string& args) { return tensortune::testing::run_tensortune(args); }

class ModelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tt_model_cli_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void expect_error(const std::string& args, const std::string& fragment) {
    CmdResult r = run(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(fragment), std::string::npos) << args << "\n" << r.output;
  }
  fs::path dir_;
};

TEST_F(ModelCli, TasksOfResnet18AreElevenConvsOneDenseAndFourWinogradAlternatives) {
  CmdResult r = run("tasks --model resnet-18");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 11 convs and a dense, and beside each of the 4 distinct 3x3 stride-1 convs its Winograd task.
  EXPECT_NE(r.output.find("16 tasks in resnet-18"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("conv2d_NCHWc_winograd.x86 conv2d 1x64x56x56 k64x3x3"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("conv2d 1x64x56x56 k64x3x3 s1,1 p1,1,1,1 d1,1"), std::string::npos);
  EXPECT_NE(r.output.find("dense 1x512 w1000x512"), std::string::npos);
  // resnet-18 is 3.63 GFLOP, nearly all of it in these tasks.
  EXPECT_NE(r.output.find("3.628 GFLOP"), std::string::npos) << r.output;
  CmdResult j = run("tasks --model resnet-18 --json");
  ASSERT_EQ(j.exit_code, 0);
  EXPECT_NE(j.output.find("\"workload_key\""), std::string::npos);
  // On a CUDA target the same workloads take AutoTVM's CUDA templates and argument lists.
  CmdResult g = run("tasks --model resnet-18 --target cuda-sm90");
  ASSERT_EQ(g.exit_code, 0) << g.output;
  // The four 3x3 stride-1 workloads also get a conv2d_nchw_winograd.cuda task, as on the CPU.
  EXPECT_NE(g.output.find("16 tasks in resnet-18 (target cuda -arch=sm_90)"), std::string::npos)
      << g.output;
  EXPECT_NE(g.output.find("conv2d_nchw_winograd.cuda conv2d 1x64x56x56 k64x3x3"), std::string::npos)
      << g.output;
  EXPECT_TRUE(
      std::regex_search(g.output, std::regex("dense_small_batch\\.gpu +dense 1x512 w1000x512")))
      << g.output;
  EXPECT_EQ(g.output.find("conv2d_NCHWc.x86"), std::string::npos) << g.output;
  EXPECT_NE(g.output.find("--op conv2d_nchw --target cuda-sm90"), std::string::npos) << g.output;
  CmdResult gj = run("tasks --model resnet-18 --target cuda-sm90 --json");
  EXPECT_NE(gj.output.find("[1, 1], \\\"float32\\\"]]"), std::string::npos)
      << "no layouts in CUDA workload keys\n"
      << gj.output;
  expect_error("tasks --model resnet-18 --target rocm", "--target = 'rocm' is not llvm, cuda");
}

TEST_F(ModelCli, InspectPrintsAfterEachPass) {
  CmdResult r = run("inspect --model mobilenet-v1 --opt-level 3 --print-after-each");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* pass : {"SimplifyInference", "FoldConstant", "FoldScaleAxis", "AlterOpLayout",
                           "DeadCodeElimination", "FuseOps"})
    EXPECT_NE(r.output.find(std::string("=== after ") + pass + " ==="), std::string::npos) << pass;
  CmdResult o2 = run("inspect --model mobilenet-v1 --opt-level 2 --print-after-each");
  EXPECT_EQ(o2.output.find("=== after FoldScaleAxis ==="), std::string::npos);
}

TEST_F(ModelCli, ReferenceRunsAgreeAcrossOptLevelsAndThroughOnnx) {
  ASSERT_EQ(run("export-onnx --model resnet-18 -o " + path("r18.onnx")).exit_code, 0);
  tensortune::Tensor x = tensortune::Tensor::zeros({1, 3, 224, 224});
  tensortune::fill_uniform(x, 11);
  ASSERT_TRUE(tensortune::write_npy(path("x.npy"), x));
  CmdResult a =
      run("run --model resnet-18 --opt-level 0 --reference --input data=" + path("x.npy") + " -o " +
          path("y0.npy"));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  CmdResult b = run("run --model " + path("r18.onnx") + " --opt-level 3 --reference --input data=" +
                    path("x.npy") + " -o " + path("y3.npy"));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  auto y0 = tensortune::read_npy(path("y0.npy"));
  auto y3 = tensortune::read_npy(path("y3.npy"));
  ASSERT_TRUE(y0 && y3);
  ASSERT_EQ(y0->shape, (std::vector<int64_t>{1, 1000}));
  double scale = 0, diff = 0;
  for (size_t i = 0; i < y0->f32.size(); ++i) {
    scale = std::max(scale, double(std::abs(y0->f32[i])));
    diff = std::max(diff, double(std::abs(y0->f32[i] - y3->f32[i])));
  }
  EXPECT_LT(diff, 1e-4 * scale);
}

TEST_F(ModelCli, TuneAModelThenCompileWithItsRecords) {
  const std::string db = path("m.db");
  CmdResult t =
      run("tune --model mobilenet-v1 --input-shape data=1x3x32x32 --only 1 --trials 4 "
          "--number 1 --repeat 1 --min-repeat-ms 0 --db " +
          db);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("conv2d 1x3x32x32 k32x3x3 s2,2 p1,1,1,1 d1,1"), std::string::npos)
      << t.output;
  CmdResult i = run(
      "inspect --model mobilenet-v1 --input-shape data=1x3x32x32 --opt-level 3 --records " + db);
  ASSERT_EQ(i.exit_code, 0) << i.output;
  // The tuned stem has its record; an untuned pointwise conv falls back with a warning.
  EXPECT_EQ(i.output.find("no tuned record for conv2d_NCHWc.x86 conv2d 1x3x32x32"),
            std::string::npos)
      << i.output;
  EXPECT_NE(i.output.find("no tuned record for conv2d_NCHWc.x86 conv2d 1x32x16x16 k64x1x1"),
            std::string::npos)
      << i.output;
  expect_error("tune --model mobilenet-v1 --only 99 --db " + db, "--only 99");
}

double max_relative_difference(const tensortune::Tensor& a, const tensortune::Tensor& b) {
  double scale = 1e-30, diff = 0;
  for (size_t i = 0; i < b.f32.size(); ++i) {
    scale = std::max(scale, double(std::abs(b.f32[i])));
    diff = std::max(diff, double(std::abs(a.f32[i] - b.f32[i])));
  }
  return diff / scale;
}

// compile -> run -> run --reference on the artifact's own graph -> bench --profile, through an
// ONNX file with records from a tuning run; then the artifact refused when corrupted.
TEST_F(ModelCli, CompileRunAndBenchAnArtifact) {
  ASSERT_EQ(run("export-onnx --model resnet-18 --input-shape data=1x3x64x64 -o " + path("r18.onnx"))
                .exit_code,
            0);
  const std::string db = path("r.db");
  CmdResult t = run("tune --model " + path("r18.onnx") +
                    " --only 2 --trials 3 --number 1 --repeat 1 "
                    "--min-repeat-ms 0 --db " +
                    db);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  CmdResult c = run("compile --model " + path("r18.onnx") + " --records " + db +
                    " --threads 2 -v -o " + path("r18.tt"));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  // The ten untuned conv workloads borrow the one tuned workload's config (the dense layer, of
  // another template, takes its default)...
  EXPECT_NE(c.output.find("1 tuned, 10 borrowed, 1 default"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("0 interpreted"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("no tuned record for conv2d_NCHWc.x86"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("(borrowed from conv2d "), std::string::npos) << c.output;
  // ...or take the default config when asked.
  CmdResult d = run("compile --model " + path("r18.onnx") + " --records " + db +
                    " --no-fallback-from-records -o " + path("r18d.tt"));
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("1 tuned, 0 borrowed, 11 default"), std::string::npos) << d.output;

  tensortune::Tensor x = tensortune::Tensor::zeros({1, 3, 64, 64});
  tensortune::fill_uniform(x, 3);
  ASSERT_TRUE(tensortune::write_npy(path("x.npy"), x));
  CmdResult r =
      run("run " + path("r18.tt") + " --input data=" + path("x.npy") + " -o " + path("y.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("compiled, 2 threads"), std::string::npos) << r.output;
  CmdResult ref = run("run " + path("r18.tt") + " --reference --input data=" + path("x.npy") +
                      " -o " + path("yr.npy"));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  CmdResult o0 = run(
      "run --model resnet-18 --input-shape data=1x3x64x64 --opt-level 0 --reference --input data=" +
      path("x.npy") + " -o " + path("y0.npy"));
  ASSERT_EQ(o0.exit_code, 0) << o0.output;
  // The compiled network's output keeps the model's name for it, whatever value the passes
  // left it reading.
  auto output_name = [](const std::string& log) {
    const size_t at = log.find("output 0 '");
    if (at == std::string::npos) return std::string();
    const size_t begin = at + 10;
    return log.substr(begin, log.find('\'', begin) - begin);
  };
  EXPECT_NE(output_name(o0.output), "") << o0.output;
  EXPECT_EQ(output_name(r.output), output_name(o0.output)) << r.output;
  auto y = tensortune::read_npy(path("y.npy"));
  auto yr = tensortune::read_npy(path("yr.npy"));
  auto y0 = tensortune::read_npy(path("y0.npy"));
  ASSERT_TRUE(y && yr && y0);
  EXPECT_LT(max_relative_difference(*y, *yr), 1e-4);
  EXPECT_LT(max_relative_difference(*y, *y0), 1e-4);

  CmdResult b =
      run("bench " + path("r18.tt") + " --threads 1 --repeat 3 --min-repeat-ms 10 --profile");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("1 warm-up run not counted"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find("conv2d_nchwc+add+relu"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find("sum of steps"), std::string::npos) << b.output;

  expect_error("run " + path("r18.tt") + " --input dat=random", "'dat', which is not an input");
  expect_error("run " + path("r18.tt") + " --gpu 1 --input data=random", "runs on the CPU");
  expect_error("bench " + path("r18.tt") + " --gpu 0", "runs on the CPU");
  expect_error("run " + path("r18.tt") + " --input data=" + path("x.npy") + " --model resnet-18",
               "not both");
  fs::resize_file(path("r18.tt"), fs::file_size(path("r18.tt")) - 100);
  expect_error("bench " + path("r18.tt"), "checksum does not match");
  std::ofstream(path("junk.tt")) << "hello";
  expect_error("run " + path("junk.tt") + " --input data=random", "does not start with TTNET");
  expect_error("run " + path("missing.tt") + " --input data=random", "cannot open artifact");
}

// The AutoTVM flow with the graph tuner: tune the tasks, graph-tune (transforms measured and
// kept), compile with the graph-best records, run equal to the reference; a second graph-tune
// measures nothing new; a DB without this model's records is a clear error.
TEST_F(ModelCli, TuneGraphTuneCompileAndRun) {
  const std::string db = path("g.db"), shape = " --input-shape data=1x3x32x32";
  CmdResult g = run("tune --model resnet-18" + shape +
                    " --trials 4 --number 1 --repeat 1 --min-repeat-ms 0 --imposed-trials 2 "
                    "--graph-tune --db " +
                    db);
  ASSERT_EQ(g.exit_code, 0) << g.output;
  // Between the tasks and the graph tuner: the layers compiled at blocks their neighbours impose
  // (which ones depends on the measured times), each with up to two configs of those blocks.
  const bool imposed = g.output.find(
                           "at blocks their neighbours impose; measuring up to 2 "
                           "configs") != std::string::npos;
  EXPECT_TRUE(imposed || g.output.find("every layer runs at the blocks of its fastest record") !=
                             std::string::npos)
      << g.output;
  EXPECT_NE(g.output.find("0 reused"), std::string::npos) << g.output;
  EXPECT_NE(g.output.find("optimal"), std::string::npos) << g.output;
  EXPECT_NE(g.output.find("wrote 20 graph-best records"), std::string::npos) << g.output;
  CmdResult again = run("graph-tune --model resnet-18" + shape + " --db " + db +
                        " --solver pbqp --export-log " + path("graph_opt.log"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("(0 measured now"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("20 records, one per tuned conv node"), std::string::npos)
      << again.output;
  // The graph opt log carries the choice to another DB, as AutoTVM's apply_graph_best reads it.
  CmdResult imported = run("graph-tune --model resnet-18" + shape + " --db " + path("other.db") +
                           " --from-log " + path("graph_opt.log"));
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  EXPECT_NE(imported.output.find("imported 20 graph-best records"), std::string::npos)
      << imported.output;
  CmdResult from_other = run("compile --model resnet-18" + shape + " --records " +
                             path("other.db") + " -o " + path("other.tt"));
  ASSERT_EQ(from_other.exit_code, 0) << from_other.output;
  EXPECT_NE(from_other.output.find("graph-best for 20 nodes"), std::string::npos)
      << from_other.output;
  expect_error("graph-tune --model mobilenet-v1" + shape + " --db " + path("other.db") +
                   " --from-log " + path("graph_opt.log"),
               "the log is not this model's");
  expect_error("graph-tune --model resnet-18 --db " + path("missing.db"), "does not exist");
  EXPECT_FALSE(fs::exists(path("missing.db")));
  CmdResult c =
      run("compile --model resnet-18" + shape + " --records " + db + " -v -o " + path("g.tt"));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("graph-best for 20 nodes"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("(graph-best)"), std::string::npos) << c.output;
  tensortune::Tensor x = tensortune::Tensor::zeros({1, 3, 32, 32});
  tensortune::fill_uniform(x, 5);
  ASSERT_TRUE(tensortune::write_npy(path("x.npy"), x));
  ASSERT_EQ(run("run " + path("g.tt") + " --input data=" + path("x.npy") + " -o " + path("y.npy"))
                .exit_code,
            0);
  ASSERT_EQ(run("run " + path("g.tt") + " --reference --input data=" + path("x.npy") + " -o " +
                path("yr.npy"))
                .exit_code,
            0);
  auto y = tensortune::read_npy(path("y.npy"));
  auto yr = tensortune::read_npy(path("yr.npy"));
  ASSERT_TRUE(y && yr);
  EXPECT_LT(max_relative_difference(*y, *yr), 1e-4);
  // At every other opt level the graph-best records compile to the same function.
  for (const char* opt : {"0", "1", "2"}) {
    const std::string tt = path(std::string("g") + opt + ".tt");
    CmdResult level = run("compile --model resnet-18" + shape + " --opt-level " + opt +
                          " --records " + db + " -o " + tt);
    ASSERT_EQ(level.exit_code, 0) << level.output;
    ASSERT_EQ(
        run("run " + tt + " --input data=" + path("x.npy") + " -o " + path("yo.npy")).exit_code, 0)
        << opt;
    auto yo = tensortune::read_npy(path("yo.npy"));
    ASSERT_TRUE(yo);
    EXPECT_LT(max_relative_difference(*yo, *yr), 1e-4) << "opt level " << opt;
  }
  // Another input shape is another model: its graph-best records are not these.
  CmdResult other = run("compile --model resnet-18 --input-shape data=1x3x64x64 --records " + db +
                        " -o " + path("o.tt"));
  ASSERT_EQ(other.exit_code, 0) << other.output;
  EXPECT_EQ(other.output.find("graph-best"), std::string::npos) << other.output;
  expect_error("graph-tune --model mobilenet-v1" + shape + " --db " + db,
               "no conv node of mobilenet-v1 has records");
  // records best --model: the model's workloads only (resnet-18 has 11 conv workloads).
  CmdResult mine = run("records best --db " + db + " --model resnet-18" + shape);
  ASSERT_EQ(mine.exit_code, 0) << mine.output;
  size_t conv_rows = 0;
  for (size_t at = 0; (at = mine.output.find("\nconv2d_NCHWc.x86", at)) != std::string::npos; ++at)
    ++conv_rows;
  EXPECT_EQ(conv_rows, 11u) << mine.output;
  CmdResult theirs = run("records best --db " + db + " --model mobilenet-v1" + shape);
  ASSERT_EQ(theirs.exit_code, 0) << theirs.output;
  EXPECT_NE(theirs.output.find("matches the filters"), std::string::npos) << theirs.output;
}

// A QDQ model graph-tunes the layers compile runs: its quantized convolutions as int8
// workloads, named as compile names them, so that compile takes the graph-best records.
TEST_F(ModelCli, AQuantizedModelGraphTunesItsInt8Layers) {
  ASSERT_EQ(run("export-onnx --model resnet-18 --input-shape data=1x3x32x32 -o " + path("r18.onnx"))
                .exit_code,
            0);
  ASSERT_EQ(
      run("quantize " + path("r18.onnx") + " -o " + path("q.onnx") + " --samples 2").exit_code, 0);
  const std::string db = path("q.db"), model = " --model " + path("q.onnx");
  CmdResult t =
      run("tune" + model + " --trials 2 --number 1 --repeat 1 --min-repeat-ms 0 --db " + db);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  CmdResult g = run("graph-tune" + model + " --db " + db);
  ASSERT_EQ(g.exit_code, 0) << g.output;
  EXPECT_NE(g.output.find("u8i8"), std::string::npos) << g.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(g.output, m, std::regex("wrote (\\d+) graph-best records")))
      << g.output;
  CmdResult c = run("compile" + model + " --records " + db + " -o " + path("g.tt"));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("graph-best for " + m[1].str() + " nodes"), std::string::npos)
      << c.output;
  CmdResult h = run("compile" + model + " --records " + db + " --no-graph-best -o " + path("h.tt"));
  ASSERT_EQ(h.exit_code, 0) << h.output;
  for (const char* tt : {"g", "h"})
    ASSERT_EQ(run("run " + path(std::string(tt) + ".tt") + " --input data=random -o " +
                  path(std::string(tt) + ".npy"))
                  .exit_code,
              0);
  auto yg = tensortune::read_npy(path("g.npy"));
  auto yh = tensortune::read_npy(path("h.npy"));
  ASSERT_TRUE(yg && yh);
  EXPECT_LT(max_relative_difference(*yg, *yh), 2e-2);
  // --no-int8: the same model's convolutions as float workloads (for compile --no-int8), which
  // the DB lacks (every layer is int8, the first on its input padded to 4 channels) until one is
  // tuned as float.
  CmdResult none = run("graph-tune" + model + " --db " + db + " --no-int8");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.output.find("no conv node of resnet-18 has records"), std::string::npos)
      << none.output;
  CmdResult tf = run("tune" + model + " --no-int8 --only 1 --trials 2 --number 1 --repeat 1 " +
                     "--min-repeat-ms 0 --db " + db);
  ASSERT_EQ(tf.exit_code, 0) << tf.output;
  CmdResult f = run("graph-tune" + model + " --db " + db + " --no-int8");
  ASSERT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output.find("u8i8"), std::string::npos) << f.output;
}

// tune --model with xgb pre-trains each task's cost model on the tasks tuned before it (the
// same template), unless --no-transfer; the first task, with nothing to learn from, just tunes.
TEST_F(ModelCli, ModelTuningTransfersBetweenTasksByDefault) {
  const std::string args =
      "tune --model resnet-18 --input-shape data=1x3x32x32 --tuner xgb "
      "--trials 16 --number 1 --repeat 1 --min-repeat-ms 0 --only 1 2 --db ";
  CmdResult with = run(args + path("a.db"));
  ASSERT_EQ(with.exit_code, 0) << with.output;
  EXPECT_NE(with.output.find("transfer: pre-trained on 16 records of 1 other"), std::string::npos)
      << with.output;
  CmdResult without = run(args + path("b.db") + " --no-transfer");
  ASSERT_EQ(without.exit_code, 0) << without.output;
  EXPECT_EQ(without.output.find("transfer: pre-trained"), std::string::npos) << without.output;
}

// One run tunes each task for several thread counts: records per count, the later count's cost
// model pre-trained on the earlier count's records of the same task, and compile --threads T
// takes T's records without borrowing another count's.
TEST_F(ModelCli, TuneAModelForSeveralThreadCounts) {
  const std::string db = path("t.db");
  CmdResult t =
      run("tune --model resnet-18 --input-shape data=1x3x32x32 --tuner xgb --trials 8 --only 1 "
          "--threads 1,2 --number 1 --repeat 1 --min-repeat-ms 0 --imposed-trials 0 --db " +
          db);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find(", 1 thread\n"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find(", 2 threads\n"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("transfer: pre-trained on 8 records of 1 other"), std::string::npos)
      << t.output;
  EXPECT_NE(t.output.find("tuned 1 task on 1,2 threads"), std::string::npos) << t.output;
  for (const char* threads : {"1", "2"}) {
    CmdResult best = run("records best --db " + db + " --threads " + threads);
    ASSERT_EQ(best.exit_code, 0) << best.output;
    EXPECT_NE(best.output.find("conv2d 1x3x32x32 k64x7x7"), std::string::npos)
        << threads << " threads:\n"
        << best.output;
  }
  const std::string compile = "compile --model resnet-18 --input-shape data=1x3x32x32 --records " +
                              db + " -o " + path("m.tt") + " --threads ";
  CmdResult two = run(compile + "2");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_EQ(two.output.find("no records measured on 2 threads"), std::string::npos) << two.output;
  CmdResult four = run(compile + "4");
  ASSERT_EQ(four.exit_code, 0) << four.output;
  EXPECT_NE(four.output.find("no records measured on 4 threads"), std::string::npos) << four.output;
  expect_error("tune --model resnet-18 --threads 1,x --db " + db, "--threads = '1,x'");
}

// A model compiled for a GPU on this GPU-less machine: the artifact is written, `run --emulate`
// computes what `run --reference` does, and running it without --emulate says why not.
TEST_F(ModelCli, CompileForCudaAndRunEmulated) {
  ASSERT_EQ(
      run("export-onnx --model mobilenet-v1 --input-shape data=1x3x32x32 -o " + path("m.onnx"))
          .exit_code,
      0);
  CmdResult c =
      run("compile --model " + path("m.onnx") + " --target cuda-sm86 -v -o " + path("m.tt"));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("for cuda -arch=sm_86"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("0 interpreted on the host"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("no tuned record for conv2d_nchw.cuda"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("run " + path("m.tt") + " --emulate"), std::string::npos) << c.output;
  tensortune::Tensor x = tensortune::Tensor::zeros({1, 3, 32, 32});
  tensortune::fill_uniform(x, 4);
  ASSERT_TRUE(tensortune::write_npy(path("x.npy"), x));
  CmdResult e = run("run " + path("m.tt") + " --emulate --input data=" + path("x.npy") + " -o " +
                    path("y.npy"));
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("emulated on this CPU"), std::string::npos) << e.output;
  CmdResult ref = run("run " + path("m.tt") + " --reference --input data=" + path("x.npy") +
                      " -o " + path("yr.npy"));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  auto y = tensortune::read_npy(path("y.npy"));
  auto yr = tensortune::read_npy(path("yr.npy"));
  ASSERT_TRUE(y && yr);
  EXPECT_LT(max_relative_difference(*y, *yr), 1e-4);
  if (run("gpus").output.find("no GPU") != std::string::npos)  // the plain run names the way out
    expect_error("run " + path("m.tt") + " --input data=random", "--emulate");
  expect_error("run " + path("m.tt") + " --emulate --gpu 1 --input data=random",
               "--emulate runs on the CPU");
  if (run("gpus").output.find("no GPU") == std::string::npos)  // a GPU number past the last
    expect_error("run " + path("m.tt") + " --gpu 99 --input data=random", "no such GPU");
  expect_error("compile --model resnet-18 --target rocm -o " + path("r.tt"), "target = 'rocm'");
}

TEST_F(ModelCli, BadModelsAndFlagsGetClearErrors) {
  expect_error("tasks --model resnet-19", "neither a zoo model");
  expect_error("inspect --model resnet-18 --input-shape x=1x3x224x224", "has one input, 'data'");
  expect_error("run --input data=random", "give an artifact");
  expect_error("run --model resnet-18 --reference --input dat=random",
               "'dat', which is not an input");
  std::ofstream(path("junk.onnx")) << "not a model";
  expect_error("tasks --model " + path("junk.onnx"), "is not an ONNX model");
  ASSERT_EQ(run("export-onnx --model mobilenet-v1 -o " + path("m.onnx")).exit_code, 0);
  fs::resize_file(path("m.onnx"), fs::file_size(path("m.onnx")) / 3);
  CmdResult r = run("inspect --model " + path("m.onnx"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("error: "), std::string::npos) << r.output;
}

}  // namespace

namespace {

double cosine(const tensortune::Tensor& a, const tensortune::Tensor& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.f32.size(); ++i) {
    ab += double(a.f32[i]) * b.f32[i];
    aa += double(a.f32[i]) * a.f32[i];
    bb += double(b.f32[i]) * b.f32[i];
  }
  return ab / std::sqrt(aa * bb);
}

}  // namespace

// `quantize` as a user runs it: a float model in, a QDQ model out that is a quarter of the
// size, every conv and the classifier quantized, and its output close to the float model's on
// data it was not calibrated on; calibration from a folder of .npy files; bad calibration
// named.
TEST_F(ModelCli, QuantizeWritesAQdqModelCloseToTheFloatOne) {
  ASSERT_EQ(run("export-onnx --model resnet-18 --input-shape data=1x3x32x32 -o " + path("r18.onnx"))
                .exit_code,
            0);
  CmdResult q =
      run("quantize " + path("r18.onnx") + " -o " + path("r18.int8.onnx") + " --samples 3");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(q.output, m, std::regex("quantized (\\d+) of (\\d+)"))) << q.output;
  EXPECT_EQ(m[1], m[2]) << q.output;
  EXPECT_EQ(m[1], "21");  // 20 convolutions and the classifier
  EXPECT_LT(fs::file_size(path("r18.int8.onnx")), fs::file_size(path("r18.onnx")) / 3);
  CmdResult check = run("check-model " + path("r18.int8.onnx") + " --json");
  ASSERT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("\"op\": \"QuantizeLinear\""), std::string::npos) << check.output;

  // Data it was not calibrated on (another seed than the samples'), float and quantized.
  tensortune::Tensor x = tensortune::Tensor::zeros({1, 3, 32, 32});
  tensortune::fill_uniform(x, 99);
  ASSERT_TRUE(tensortune::write_npy(path("x.npy"), x));
  for (const char* model : {"r18.onnx", "r18.int8.onnx"}) {
    CmdResult r = run("run --model " + path(model) + " --input data=" + path("x.npy") + " -o " +
                      path(std::string(model) + ".npy"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  auto f = tensortune::read_npy(path("r18.onnx.npy"));
  auto i8 = tensortune::read_npy(path("r18.int8.onnx.npy"));
  ASSERT_TRUE(f && i8);
  EXPECT_GE(cosine(*f, *i8), 0.99);
  EXPECT_NE(q.output.find("in [-127, 127]"), std::string::npos) << q.output;

  // --reduce-range: weights in [-64, 64], whose convolutions are int7 tasks; still close.
  CmdResult rr = run("quantize " + path("r18.onnx") + " -o " + path("r18.rr.onnx") +
                     " --samples 3 --reduce-range");
  ASSERT_EQ(rr.exit_code, 0) << rr.output;
  EXPECT_NE(rr.output.find("in [-64, 64]"), std::string::npos) << rr.output;
  CmdResult tasks = run("tasks --model " + path("r18.rr.onnx"));
  ASSERT_EQ(tasks.exit_code, 0) << tasks.output;
  EXPECT_NE(tasks.output.find("u8i7"), std::string::npos) << tasks.output;
  EXPECT_EQ(tasks.output.find("u8i8"), std::string::npos) << tasks.output;
  ASSERT_EQ(run("run --model " + path("r18.rr.onnx") + " --input data=" + path("x.npy") + " -o " +
                path("rr.npy"))
                .exit_code,
            0);
  auto rr_out = tensortune::read_npy(path("rr.npy"));
  ASSERT_TRUE(rr_out);
  EXPECT_GE(cosine(*f, *rr_out), 0.99);
  EXPECT_NE(q.output.find("21 biases corrected"), std::string::npos) << q.output;

  // --reduce-range=auto: [-64, 64] where a layer's noise grows little; every layer kept at full
  // range is named with its growth, and the two kinds add up to every weight.
  CmdResult mixed = run("quantize " + path("r18.onnx") + " -o " + path("r18.mixed.onnx") +
                        " --samples 3 --reduce-range=auto --noise-growth 1.05");
  ASSERT_EQ(mixed.exit_code, 0) << mixed.output;
  ASSERT_TRUE(std::regex_search(mixed.output, m,
                                std::regex("in \\[-64, 64\\] in (\\d+) of 21 weight tensors")))
      << mixed.output;
  const int narrowed = std::stoi(m[1]);
  EXPECT_GT(narrowed, 0) << mixed.output;
  const std::regex kept_line(
      "kept in \\[-127, 127\\]: node '[^']+' \\(\\w+\\): \\[-64, 64\\] would grow its output "
      "noise by ([0-9.]+)%");
  std::ptrdiff_t kept = 0;
  for (std::sregex_iterator it(mixed.output.begin(), mixed.output.end(), kept_line);
       it != std::sregex_iterator(); ++it, ++kept)
    EXPECT_GE(std::stod((*it)[1]), 5.0) << mixed.output;  // above 1.05, printed to 0.1%
  EXPECT_EQ(narrowed + kept, 21) << mixed.output;
  EXPECT_GT(kept, 0) << mixed.output;
  // Compiled on a CPU without VNNI, the full-range model is pointed at --reduce-range=auto; the
  // mixed one is told how many layers kept full range, not sent to the option that wrote it.
  CmdResult full_c = run("compile --model " + path("r18.int8.onnx") + " -o " + path("f.tt"));
  CmdResult mixed_c = run("compile --model " + path("r18.mixed.onnx") + " -o " + path("m.tt"));
  ASSERT_EQ(full_c.exit_code, 0) << full_c.output;
  ASSERT_EQ(mixed_c.exit_code, 0) << mixed_c.output;
  const bool vnni = full_c.output.find("have weights beyond [-64, 64]") == std::string::npos;
  if (!vnni) {
    EXPECT_NE(full_c.output.find("--reduce-range=auto` runs byte products"), std::string::npos)
        << full_c.output;
    EXPECT_EQ(mixed_c.output.find("--reduce-range=auto` runs byte products"), std::string::npos)
        << mixed_c.output;
    // Workloads, deduplicated: at most the layers kept, fewer than all.
    ASSERT_TRUE(std::regex_search(mixed_c.output, m,
                                  std::regex("(\\d+) of (\\d+) int8 workloads keep weights")))
        << mixed_c.output;
    EXPECT_GE(std::stoi(m[1]), 1);
    EXPECT_LE(std::stoi(m[1]), kept);
    EXPECT_LT(std::stoi(m[1]), std::stoi(m[2]));
  } else {
    EXPECT_EQ(mixed_c.output.find("int8 workloads keep weights"), std::string::npos)
        << mixed_c.output;
  }
  expect_error("quantize " + path("r18.onnx") + " -o " + path("x.onnx") + " --noise-growth 0.5",
               "--noise-growth = 0.500000: a factor of 1 or more");

  // A folder of samples; then a sample of the wrong shape, named.
  fs::create_directories(path("cal"));
  ASSERT_TRUE(tensortune::write_npy(path("cal/a.npy"), x));
  CmdResult d =
      run("quantize " + path("r18.onnx") + " -o " + path("d.onnx") + " --calibrate " + path("cal"));
  EXPECT_EQ(d.exit_code, 0) << d.output;
  ASSERT_TRUE(tensortune::write_npy(path("cal/b.npy"), tensortune::Tensor::zeros({1, 3, 8, 8})));
  expect_error(
      "quantize " + path("r18.onnx") + " -o " + path("d.onnx") + " --calibrate " + path("cal"),
      "b.npy is float32[1,3,8,8]; input 'data' is float32[1,3,32,32]");
  expect_error("quantize " + path("r18.onnx") + " -o " + path("d.onnx") + " --calibrate nowhere",
               "--calibrate = 'nowhere': neither 'random' nor a folder of .npy or image files");
  // A folder of images (any size: resized, ImageNet-normalised); a file that only claims to be
  // one is named.
  fs::create_directories(path("images"));
  for (int k = 0; k < 2; ++k) {
    tensortune::RgbImage im;
    im.height = 40 + 9 * k;
    im.width = 57;
    for (int64_t i = 0; i < im.height * im.width * 3; ++i)
      im.pixels.push_back(static_cast<uint8_t>((i * (7 + k)) % 256));
    ASSERT_TRUE(tensortune::write_png(path("images/im" + std::to_string(k) + ".png"), im));
  }
  CmdResult img = run("quantize " + path("r18.onnx") + " -o " + path("img.onnx") + " --calibrate " +
                      path("images"));
  EXPECT_EQ(img.exit_code, 0) << img.output;
  ASSERT_EQ(run("run --model " + path("img.onnx") + " --input data=" + path("x.npy") + " -o " +
                path("img.npy"))
                .exit_code,
            0);
  // An image as run's input: --save-input writes the tensor it ran on (pixels / 255 with
  // --mean 0 and --std 1), and running that tensor gives the same answer.
  CmdResult photo =
      run("run --model " + path("img.onnx") + " --input data=" + path("images/im0.png") +
          " --mean 0 0 0 --std 1 1 1 --save-input data=" + path("im0.npy") + " -o " +
          path("photo.npy"));
  ASSERT_EQ(photo.exit_code, 0) << photo.output;
  ASSERT_EQ(run("run --model " + path("img.onnx") + " --input data=" + path("im0.npy") + " -o " +
                path("saved.npy"))
                .exit_code,
            0);
  auto seen = tensortune::read_npy(path("im0.npy"));
  auto by_photo = tensortune::read_npy(path("photo.npy"));
  auto by_saved = tensortune::read_npy(path("saved.npy"));
  ASSERT_TRUE(seen && by_photo && by_saved);
  EXPECT_EQ(seen->shape, (tensortune::Shape{1, 3, 32, 32}));
  EXPECT_EQ(by_photo->f32, by_saved->f32);
  for (float v : seen->f32) ASSERT_TRUE(v >= 0 && v <= 1) << v;
  expect_error(
      "run --model " + path("img.onnx") + " --input data=" + path("images/im0.png") + " --mean 0.5",
      "--mean / --std: 3 value(s) each for this model's input float32[1,3,32,32], got 1 "
      "and 3");
  expect_error("run --model " + path("img.onnx") + " --input data=" + path("x.npy") +
                   " --save-input other=" + path("o.npy"),
               "--save-input = 'other=");
  {
    std::ofstream fake(path("images/broken.jpg"));
    fake << "not a jpeg";
  }
  expect_error(
      "quantize " + path("r18.onnx") + " -o " + path("img.onnx") + " --calibrate " + path("images"),
      "broken.jpg: not a readable JPEG");
  // Percentile ranges: narrower than min-max, still close to the float model; out of range
  // refused.
  CmdResult p = run("quantize " + path("r18.onnx") + " -o " + path("p.onnx") +
                    " --samples 3 --percentile 99.9");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  EXPECT_NE(p.output.find("percentile 99.9"), std::string::npos) << p.output;
  ASSERT_EQ(run("run --model " + path("p.onnx") + " --input data=" + path("x.npy") + " -o " +
                path("p.npy"))
                .exit_code,
            0);
  auto pq = tensortune::read_npy(path("p.npy"));
  ASSERT_TRUE(pq);
  EXPECT_GE(cosine(*f, *pq), 0.99);
  expect_error("quantize " + path("r18.onnx") + " -o " + path("p.onnx") + " --percentile 40",
               "--percentile = 40.000000: must be above 50 and at most 100");
}
