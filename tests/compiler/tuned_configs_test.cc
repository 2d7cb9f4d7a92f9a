// Applying the records: block sizes from a DB or an AutoTVM log reach AlterOpLayout, and
// workloads without a record fall back to the default config, named once.
#include "compiler/driver/tuned_configs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "compiler/driver/kernel_choice.h"
#include "compiler/frontend/model_zoo.h"
#include "compiler/graph/interpreter.h"
#include "compiler/passes/passes.h"
#include "records/autotvm_log.h"
#include "records/record_store.h"
#include "schedule_space/conv2d_nchwc_template.h"

namespace tensortune::driver {
namespace {

namespace fs = std::filesystem;
namespace ss = schedule_space;

const ss::Target kTarget{"llvm -keys=cpu", 16};
const ss::Conv2dWorkload kLayer = ss::square_conv2d(64, 56, 64, 3, 1);  // resnet-18 layer1

// The blocks compile lays the workload out by with these records (KernelChooser, as compile
// asks it before AlterOpLayout).
ss::KernelSignature chosen(TunedConfigs& tuned, const ss::Conv2dWorkload& w) {
  KernelChooser chooser(tuned, kTarget, {});
  auto k = chooser.for_workload(w, true);
  EXPECT_TRUE(k) << k.error().message;
  return k->signature();
}

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / ("tt_tuned_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A record DB whose only record gives kLayer ic_bn = oc_bn = 8 (not the default 32).
std::string make_db() {
  const std::string path = temp("records.db");
  fs::remove(path);
  auto store = std::move(records::RecordStore::open(path)).value();
  const ss::Task task = *ss::make_task(ss::kConv2dNCHWc, kLayer, kTarget);
  const ss::ConfigSpace space = *ss::make_config_space(task);
  for (int64_t i = 0; i < space.size(); ++i) {
    if (!space.is_valid_index(i)) continue;
    const ss::Config c = *space.config_at(i);
    const auto s = ss::conv2d_nchwc_schedule(space, c);
    if (s.ic_bn != 8 || s.oc_bn != 8) continue;
    ss::MeasureResult r;
    r.config_index = i;
    r.costs = {1e-3};
    r.device_key = "test-key";
    const int64_t id = *store->ensure_task(records::task_info(task, space));
    EXPECT_TRUE(store->add_results(id, space, {c}, {r}, {"test", "t"}, {0}));
    break;
  }
  return path;
}

TEST(TunedConfigs, RecordsChooseBlocksAndMissingOnesFallBackOnce) {
  const std::string db = make_db();
  auto tuned = TunedConfigs::load(db, "test-key", 16, /*borrow=*/false);
  ASSERT_TRUE(tuned) << tuned.error().message;
  EXPECT_EQ(tuned->size(), 1u);
  const auto s = chosen(*tuned, kLayer);
  EXPECT_EQ(s.ic_block, 8);
  EXPECT_EQ(s.oc_block, 8);
  const auto other = ss::square_conv2d(128, 28, 128, 3, 1);
  const auto d = chosen(*tuned, other);
  chosen(*tuned, other);
  EXPECT_EQ(d.oc_block, 32);  // the default: largest divisor of OC <= 2 x 16 lanes
  ASSERT_EQ(tuned->fallbacks().size(), 1u);
  EXPECT_NE(tuned->fallbacks()[0].find("1x128x28x28"), std::string::npos);

  // By default the untuned workload borrows the tuned one's blocks (both divide 128).
  auto borrowing = TunedConfigs::load(db, "test-key", 16);
  ASSERT_TRUE(borrowing);
  const auto b = chosen(*borrowing, other);
  EXPECT_EQ(b.ic_block, 8);
  EXPECT_EQ(b.oc_block, 8);
  EXPECT_TRUE(borrowing->fallbacks().empty());
  ASSERT_EQ(borrowing->borrowed().size(), 1u);
  EXPECT_NE(borrowing->borrowed().begin()->second.find("1x64x56x56"), std::string::npos);

  auto wrong_device = TunedConfigs::load(db, "another-key", 16);
  ASSERT_TRUE(wrong_device);
  EXPECT_EQ(wrong_device->size(), 0u);

  // The same record through an AutoTVM log.
  auto store = std::move(records::RecordStore::open(db)).value();
  const std::string log = temp("records.log");
  {
    std::ofstream out(log);
    ASSERT_TRUE(records::export_autotvm_log(*store, out));
  }
  auto from_log = TunedConfigs::load(log, "", 16);
  ASSERT_TRUE(from_log) << from_log.error().message;
  EXPECT_EQ(chosen(*from_log, kLayer).oc_block, 8);
  fs::remove(db);
  fs::remove(log);
}

// Records are per thread count: a DB holding kLayer tuned on 1 thread (blocks 32) and on 2
// threads (blocks 8, faster) gives each compile the config of its own thread count, and a
// count nobody tuned for takes the fastest of any.
TEST(TunedConfigs, EachThreadCountTakesTheRecordsTunedForIt) {
  const std::string path = temp("threads.db");
  fs::remove(path);
  {
    auto store = std::move(records::RecordStore::open(path)).value();
    const ss::Task task = *ss::make_task(ss::kConv2dNCHWc, kLayer, kTarget);
    const ss::ConfigSpace space = *ss::make_config_space(task);
    const int64_t id = *store->ensure_task(records::task_info(task, space));
    for (auto [blocks, threads, cost] :
         std::vector<std::tuple<int64_t, int, double>>{{32, 1, 1e-3}, {8, 2, 0.6e-3}}) {
      for (int64_t i = 0; i < space.size(); ++i) {
        if (!space.is_valid_index(i)) continue;
        const ss::Config c = *space.config_at(i);
        const auto s = ss::conv2d_nchwc_schedule(space, c);
        if (s.ic_bn != blocks || s.oc_bn != blocks) continue;
        ss::MeasureResult r;
        r.config_index = i;
        r.costs = {cost};
        r.device_key = "test-key";
        r.threads = threads;
        ASSERT_TRUE(store->add_results(id, space, {c}, {r}, {"test", "t"}, {0}));
        break;
      }
    }
  }
  for (auto [threads, blocks] : std::vector<std::pair<int, int64_t>>{{1, 32}, {2, 8}, {4, 8}}) {
    auto tuned = TunedConfigs::load(path, "test-key", 16, false, threads);
    ASSERT_TRUE(tuned) << tuned.error().message;
    EXPECT_EQ(chosen(*tuned, kLayer).oc_block, blocks) << threads << " threads";
    ASSERT_EQ(
        tuned->candidates_by_blocks(kLayer, ss::templates_for(kLayer, "llvm"), kTarget).size(),
        threads == 4 ? 2u : 1u);
  }
  fs::remove(path);
}

TEST(TunedConfigs, BadFilesAreRefusedByName) {
  auto missing = TunedConfigs::load(temp("nope.db"), "", 16);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nope.db"), std::string::npos);
  const std::string junk = temp("junk.log");
  std::ofstream(junk) << "{not json\n";
  auto bad = TunedConfigs::load(junk, "", 16);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("junk.log"), std::string::npos) << bad.error().message;
  fs::remove(junk);
}

TEST(TunedConfigs, NonDefaultBlocksKeepTheNetworkAnswer) {
  const std::string db = make_db();
  auto tuned = std::make_shared<TunedConfigs>(
      std::move(TunedConfigs::load(db, "test-key", 16, /*borrow=*/false)).value());
  passes::PipelineOptions options;
  options.layout.choose_blocks = [tuned](const ss::Conv2dWorkload& w) {
    const auto s = chosen(*tuned, w);
    return passes::ConvBlocks{s.ic_block, s.oc_block};
  };
  auto model = frontend::zoo_model("resnet-18");
  ASSERT_TRUE(model);
  passes::PassContext ctx;
  ctx.opt_level = 3;
  auto optimised = passes::run_pipeline(passes::standard_pipeline(options), *model, ctx);
  ASSERT_TRUE(optimised) << optimised.error().message;
  int tuned_convs = 0;
  for (const auto& n : optimised->nodes())
    if (n.op == graph::OpKind::kConv2dNCHWc && n.attrs.get_int("oc_bn", 0) == 8) ++tuned_convs;
  EXPECT_EQ(tuned_convs, 4);  // the four 3x3 64->64 convs of layer1
  Tensor x = Tensor::zeros({1, 3, 224, 224});
  fill_uniform(x, 5);
  const std::map<std::string, graph::Tensor> in{{"data", x}};
  auto want = graph::interpret(*model, in);
  auto got = graph::interpret(*optimised, in);
  ASSERT_TRUE(want && got);
  double scale = 0, diff = 0;
  for (size_t i = 0; i < (*want)[0].f32.size(); ++i) {
    scale = std::max(scale, double(std::abs((*want)[0].f32[i])));
    diff = std::max(diff, double(std::abs((*want)[0].f32[i] - (*got)[0].f32[i])));
  }
  EXPECT_LT(diff, 1e-4 * scale);
  fs::remove(db);
}

}  // namespace
}  // namespace tensortune::driver

namespace tensortune::driver {
namespace {

// A dense layer at a token count nobody tuned (a sequence bucket) borrows the same layer's
// config at the nearest tuned count, not another layer's of a closer size.
TEST(TunedConfigs, ADenseAtAnotherTokenCountBorrowsTheSameLayers) {
  const std::string db = temp("dense.db");
  fs::remove(db);
  {
    auto store = std::move(records::RecordStore::open(db)).value();
    for (const ss::DenseWorkload w : {ss::DenseWorkload{32, 64, 64}, ss::DenseWorkload{4, 128, 64},
                                      ss::DenseWorkload{128, 64, 64}}) {
      const ss::Task task = *ss::make_task(ss::kDensePack, w, kTarget);
      const ss::ConfigSpace space = *ss::make_config_space(task);
      const ss::Config c = ss::default_config(task, space);
      ss::MeasureResult r;
      r.config_index = c.index;
      r.costs = {1e-4};
      r.device_key = "test-key";
      const int64_t id = *store->ensure_task(records::task_info(task, space));
      EXPECT_TRUE(store->add_results(id, space, {c}, {r}, {"test", "t"}, {0}));
    }
  }
  auto tuned = TunedConfigs::load(db, "test-key", 16);
  ASSERT_TRUE(tuned) << tuned.error().message;
  const ss::Task want = *ss::make_task(ss::kDensePack, ss::DenseWorkload{8, 64, 64}, kTarget);
  tuned->config(want, *ss::make_config_space(want));
  ASSERT_EQ(tuned->borrowed().size(), 1u);
  EXPECT_EQ(tuned->borrowed().begin()->second, "dense 32x64 w64x64");
  fs::remove(db);
}

// Whether attention runs fused: where records time the fused kernel and both batch matmuls, the
// faster, the matmuls' softmax and mask add counted by the scores they move (BERT-base's 12 x 128
// x 128: 0.26 ms); without all three records, the caller's fallback.
TEST(TunedConfigs, RecordsOfBothPathsChooseWhetherAttentionRunsFused) {
  const ss::AttentionWorkload attention{12, 128, 128, 64, 64, 1, 1, 0.125};
  const ss::BatchMatmulWorkload scores{12, 128, 128, 64, false}, product{12, 128, 64, 128, false};
  auto write = [&](double fused_s, double matmul_s, bool with_product) {
    const std::string db = temp("attention.db");
    fs::remove(db);
    auto store = std::move(records::RecordStore::open(db)).value();
    auto add = [&](const char* tmpl, const ss::Workload& w, double seconds) {
      const ss::Task task = *ss::make_task(tmpl, w, kTarget);
      const ss::ConfigSpace space = *ss::make_config_space(task);
      const ss::Config c = ss::default_config(task, space);
      ss::MeasureResult r;
      r.config_index = c.index;
      r.costs = {seconds};
      r.device_key = "test-key";
      const int64_t id = *store->ensure_task(records::task_info(task, space));
      EXPECT_TRUE(store->add_results(id, space, {c}, {r}, {"test", "t"}, {0}));
    };
    add(ss::kAttentionX86, attention, fused_s);
    add(ss::kBatchMatmulX86, scores, matmul_s);
    if (with_product) add(ss::kBatchMatmulX86, product, matmul_s);
    return std::move(TunedConfigs::load(db, "test-key", 16)).value();
  };
  // Fused 0.5 ms against 2 x 0.15 ms + 0.26 ms: fused; against 2 x 0.3 ms + 0.26: fused; a fused
  // kernel slower than both matmuls and what lies between them: unfused.
  EXPECT_TRUE(attention_fused(write(0.5e-3, 0.15e-3, true), attention, kTarget, {}, false));
  EXPECT_FALSE(attention_fused(write(0.7e-3, 0.15e-3, true), attention, kTarget, {}, true));
  // One matmul without a record: the fallback, either way.
  EXPECT_TRUE(attention_fused(write(0.7e-3, 0.15e-3, false), attention, kTarget, {}, true));
  EXPECT_FALSE(attention_fused(write(0.1e-3, 0.15e-3, false), attention, kTarget, {}, false));
  // Values wider than any output tile of 28 vectors: no kernel, whatever the fallback says.
  ss::AttentionWorkload wide = attention;
  wide.dv = 29 * 16;
  EXPECT_FALSE(attention_fused(TunedConfigs(), wide, kTarget, {}, true));
  EXPECT_TRUE(attention_fused(TunedConfigs(), attention, kTarget, {}, true));
  fs::remove(temp("attention.db"));
}

}  // namespace
}  // namespace tensortune::driver
