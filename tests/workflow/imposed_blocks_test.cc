// The layers a compiled network runs at blocks its neighbours impose, from a DB written by hand:
// mobilenet-v1's convolutions have records at 16/16 blocks only; each depthwise layer a fast
// record at 8/8 and a barely slower one at 16/16. The layout-aware choice runs every depthwise
// layer at 16/16 (two layout transforms would cost more than the difference), so every one is
// imposed; measuring adds configs of those blocks only, and a rerun measures nothing new.
#include "workflow/imposed_blocks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/tuned_configs.h"
#include "compiler/frontend/model_zoo.h"
#include "records/record_store.h"

namespace tensortune::workflow {
namespace {

namespace fs = std::filesystem;
namespace ss = schedule_space;

const char* kKey = "test-key";

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / ("tt_imposed_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

ModelOptions mobilenet(const std::string& db) {
  ModelOptions m;
  m.model = "mobilenet-v1";
  m.input_shapes = {"data=1x3x32x32"};
  m.records = db;
  m.device_key = kKey;
  return m;
}

/// The valid configs of the task whose kernel has these blocks (0: any input block).
std::vector<int64_t> configs_with_blocks(const ss::Task& task, const ss::ConfigSpace& space,
                                         int64_t ic, int64_t oc) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < space.size(); ++i) {
    if (!space.is_valid_index(i)) continue;
    const ss::KernelSignature s = ss::template_of(task).signature(task, space, *space.config_at(i));
    if ((ic == 0 || s.ic_block == ic) && s.oc_block == oc) out.push_back(i);
  }
  return out;
}

void add_record(records::RecordStore& store, const ss::Task& task, const ss::ConfigSpace& space,
                int64_t index, double seconds) {
  ss::MeasureResult r;
  r.config_index = index;
  r.costs = {seconds};
  r.device_key = kKey;
  const int64_t id = *store.ensure_task(records::task_info(task, space));
  ASSERT_TRUE(
      store.add_results(id, space, {*space.config_at(index)}, {r}, {"test", "t", "", ""}, {0}));
}

TEST(ImposedBlocks, DepthwiseLayersAreMeasuredAtTheBlocksOfTheConvolutionsAroundThem) {
  const std::string db = temp("records.db");
  fs::remove(db);
  auto model = frontend::zoo_model("mobilenet-v1", {1, 3, 32, 32});
  ASSERT_TRUE(model) << model.error().message;
  const ss::Target target = codegen::host_target();
  std::vector<ss::Conv2dWorkload> convs;
  driver::CompileOptions collect;
  collect.choose_kernel = [&](const ss::Workload& w) -> std::optional<ss::TemplateConfig> {
    if (const auto* c = std::get_if<ss::Conv2dWorkload>(&w))
      if (std::find(convs.begin(), convs.end(), *c) == convs.end()) convs.push_back(*c);
    return std::nullopt;
  };
  ASSERT_TRUE(driver::compile_network(*model, collect));

  std::set<std::string> depthwise;  // their workload keys
  {
    auto store = records::RecordStore::open(db);
    ASSERT_TRUE(store);
    for (const auto& w : convs) {
      const char* name = w.is_depthwise() ? ss::kDepthwiseConv2dNCHWc : ss::kConv2dNCHWc;
      auto task = ss::make_task(name, w, target);
      ASSERT_TRUE(task) << task.error().message;
      const ss::ConfigSpace space = *ss::make_config_space(*task);
      if (!w.is_depthwise()) {
        const auto at16 = configs_with_blocks(*task, space, w.in_channels % 16 ? 0 : 16, 16);
        ASSERT_FALSE(at16.empty()) << ss::describe_workload(w);
        add_record(**store, *task, space, at16.front(), 1e-3);
        continue;
      }
      depthwise.insert(ss::workload_key(*task));
      const auto at8 = configs_with_blocks(*task, space, 8, 8);
      const auto at16 = configs_with_blocks(*task, space, 16, 16);
      ASSERT_FALSE(at8.empty() || at16.empty()) << ss::describe_workload(w);
      add_record(**store, *task, space, at8.front(), 1.000e-5);
      add_record(**store, *task, space, at16.front(), 1.001e-5);
    }
  }
  ASSERT_GE(depthwise.size(), 5u);

  auto imposed = imposed_blocks(mobilenet(db));
  ASSERT_TRUE(imposed) << imposed.error().message;
  std::set<std::string> found;
  for (const ImposedBlocks& b : *imposed) {
    found.insert(ss::workload_key(b.task));
    EXPECT_EQ(b.ic_block, 16);
    EXPECT_EQ(b.oc_block, 16);
    EXPECT_FALSE(b.nodes.empty());
    const ss::ConfigSpace space = *ss::make_config_space(b.task);
    EXPECT_EQ(b.configs, configs_with_blocks(b.task, space, 16, 16));
  }
  EXPECT_EQ(found, depthwise);

  TuningOptions tuning;
  tuning.trials = 2;
  tuning.number = 1;
  tuning.repeat = 1;
  tuning.min_repeat_ms = 0;
  tuning.device_key = kKey;
  auto measured = tune_imposed_blocks(mobilenet(db), tuning);
  ASSERT_TRUE(measured) << measured.error().message;
  // Two configs of each, where the blocks have two besides the one recorded.
  int64_t expected = 0;
  for (const ImposedBlocks& b : *imposed)
    expected += std::min<int64_t>(2, static_cast<int64_t>(b.configs.size()) - 1);
  EXPECT_EQ(*measured, expected);
  // Every depthwise workload now has those records at 16/16 and still one at 8/8.
  auto tuned = driver::TunedConfigs::load(db, kKey, target.vector_lanes, false);
  ASSERT_TRUE(tuned);
  for (const ImposedBlocks& b : *imposed) {
    int at16 = 0, at8 = 0;
    for (const auto& c : tuned->candidates(b.task.workload, {&ss::template_of(b.task)}, target)) {
      at16 += c.ic_block == 16 && c.oc_block == 16;
      at8 += c.ic_block == 8 && c.oc_block == 8;
    }
    EXPECT_EQ(at16, 1 + std::min<int>(2, static_cast<int>(b.configs.size()) - 1))
        << ss::describe_workload(b.task.workload);
    EXPECT_EQ(at8, 1) << ss::describe_workload(b.task.workload);
  }
  // A rerun resumes: nothing left to measure within the same budget.
  auto again = tune_imposed_blocks(mobilenet(db), tuning);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, 0);
  fs::remove(db);
}

}  // namespace
}  // namespace tensortune::workflow
