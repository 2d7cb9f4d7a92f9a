// Compiled networks with Winograd kernels against the reference interpreter: chosen directly for
// every layer they serve (every zoo model), and chosen by records where they measured faster
// than the direct template (and not where they did not, nor with winograd = false).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/driver/compile.h"
#include "compiler/frontend/model_zoo.h"
#include "compiler/graph/interpreter.h"
#include "compiler/runtime/artifact.h"
#include "compiler/runtime/executor.h"
#include "records/record_store.h"
#include "schedule_space/conv2d_winograd_template.h"
#include "schedule_space/task.h"
#include "schedule_space/winograd_transform.h"
#include "tests/backend/network_test_util.h"

namespace tensortune::driver {
namespace {

namespace fs = std::filesystem;
namespace ss = schedule_space;
using graph::Tensor;
using runtime::CompiledNetwork;
using runtime::Executable;
using testing::random_input;
using testing::relative_error;

const graph::Shape kSmall = {1, 3, 64, 64};
constexpr double kTolerance = 1e-4;

std::unique_ptr<Executable> build(const graph::Graph& model, const CompileOptions& options,
                                  int threads, CompiledNetwork* compiled) {
  auto net = compile_network(model, options);
  EXPECT_TRUE(net.has_value()) << net.error().message;
  if (!net) return nullptr;
  *compiled = *net;
  auto back = runtime::deserialize_network(runtime::serialize_network(*net), "test");
  EXPECT_TRUE(back.has_value()) << back.error().message;
  if (!back) return nullptr;
  auto exe = Executable::load(std::make_shared<CompiledNetwork>(std::move(*back)), threads);
  EXPECT_TRUE(exe.has_value()) << exe.error().message;
  return exe ? std::move(*exe) : nullptr;
}

int winograd_steps(const CompiledNetwork& net) {
  int n = 0;
  for (const auto& s : net.steps) n += s.label.find("winograd") != std::string::npos;
  return n;
}

TEST(WinogradNetwork, EveryZooModelWithWinogradWhereItServesMatchesTheInterpreter) {
  for (const std::string& name : frontend::zoo_model_names()) {
    auto model = frontend::zoo_model(name, kSmall);
    ASSERT_TRUE(model) << name;
    int layer = 0, served = 0;
    CompileOptions options;
    options.choose_kernel = [&](const ss::Workload& workload) -> std::optional<ss::TemplateConfig> {
      const auto* c = std::get_if<ss::Conv2dWorkload>(&workload);
      if (!c) return std::nullopt;
      const ss::Conv2dWorkload& w = *c;
      if (w.groups != 1) return std::nullopt;  // the depthwise template's own choice
      const ss::Target target = codegen::host_target();
      const int64_t ic_bn = w.in_channels % 8 == 0 ? 8 : w.in_channels;
      if (!ss::winograd_accepts(w)) {
        const ss::Task t = *ss::make_task(ss::kConv2dNCHWc, w, target);
        const ss::ConfigSpace space = *ss::make_config_space(t);
        auto config = ss::template_of(t).config_for_blocks(t, space, ic_bn,
                                                           w.out_channels % 16 == 0 ? 16 : 1);
        if (!config) return std::nullopt;
        return ss::TemplateConfig{t, space, *config};
      }
      // Every other layer splits its output channels over two parallel groups, and half the
      // layers prefetch their weights.
      const int64_t oc_bn = w.out_channels % 16 == 0 ? 16 : w.out_channels;
      auto k = testing::kernel_with(
          ss::kConv2dNCHWcWinograd, w, target,
          {{"tile_ic", ic_bn},
           {"tile_oc", oc_bn},
           {"tile_m", ss::kWinogradTiles[layer % 3]},
           {"reg_t", 4},
           {"block_t", 1},
           {"oc_split", std::min<int64_t>(1 + layer % 2, w.out_channels / oc_bn)},
           {"prefetch", layer % 4 >= 2}});
      ++layer;
      ++served;
      return k;
    };
    CompiledNetwork net;
    auto exe = build(*model, options, 2, &net);
    ASSERT_TRUE(exe) << name;
    const Tensor x = random_input(kSmall, 7);
    auto ref = graph::interpret(*model, {{"data", x}});
    auto out = exe->run({{"data", x}});
    ASSERT_TRUE(ref && out) << name;
    const double err = relative_error((*out)[0], (*ref)[0]);
    EXPECT_LT(err, kTolerance) << name;
    EXPECT_EQ(winograd_steps(net) > 0, served > 0) << name;
    std::printf("%-13s %d Winograd steps: relative error %.2g\n", name.c_str(), winograd_steps(net),
                err);
  }
}

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / ("tt_winograd_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void add_record(records::RecordStore& store, const ss::Task& task, const ss::ConfigSpace& space,
                const ss::Config& c, double cost) {
  ss::MeasureResult r;
  r.config_index = c.index;
  r.costs = {cost};
  r.device_key = "test-key";
  const int64_t id = *store.ensure_task(records::task_info(task, space));
  ASSERT_TRUE(store.add_results(id, space, {c}, {r}, {"test", "t"}, {0}));
}

// Every conv workload has a direct record; every 3x3 stride-1 one also a Winograd record, faster
// than the direct one except for the first such workload. Compile takes Winograd exactly where
// it measured faster, the answer stays, and winograd = false takes the direct kernels.
TEST(WinogradNetwork, RecordsChooseWinogradWhereItMeasuredFaster) {
  auto model = frontend::zoo_model("resnet-18", kSmall);
  ASSERT_TRUE(model);
  std::vector<ss::Conv2dWorkload> workloads;
  CompileOptions collect;
  collect.choose_kernel = [&](const ss::Workload& w) -> std::optional<ss::TemplateConfig> {
    if (const auto* c = std::get_if<ss::Conv2dWorkload>(&w); c && c->groups == 1)
      if (std::find(workloads.begin(), workloads.end(), *c) == workloads.end())
        workloads.push_back(*c);
    return std::nullopt;
  };
  ASSERT_TRUE(compile_network(*model, collect));

  const std::string db = temp("records.db");
  fs::remove(db);
  std::set<std::string> faster, slower;
  {
    auto store = std::move(records::RecordStore::open(db)).value();
    const ss::Target target = codegen::host_target();
    int eligible = 0;
    for (const auto& w : workloads) {
      const ss::Task direct = *ss::make_task(ss::kConv2dNCHWc, w, target);
      const ss::ConfigSpace ds = *ss::make_config_space(direct);
      add_record(*store, direct, ds, ss::default_config(direct, ds), 1e-3);
      if (!ss::winograd_accepts(w)) continue;
      const ss::Task wt = *ss::make_task(ss::kConv2dNCHWcWinograd, w, target);
      const ss::ConfigSpace ws = *ss::make_config_space(wt);
      ss::Config c = ss::default_config(wt, ws);
      const bool wins = eligible++ > 0;
      add_record(*store, wt, ws, c, wins ? 0.5e-3 : 2e-3);
      (wins ? faster : slower).insert(ss::describe_workload(w));
    }
  }
  ASSERT_FALSE(faster.empty());
  ASSERT_FALSE(slower.empty());

  CompileOptions with_records;
  with_records.records = db;
  with_records.device_key = "test-key";
  CompiledNetwork net;
  auto exe = build(*model, with_records, 1, &net);
  ASSERT_TRUE(exe);
  for (const auto& s : net.schedules) {
    if (!s.workload.starts_with("conv2d_NCHWc")) continue;  // dense
    const bool is_winograd = s.workload.starts_with(ss::kConv2dNCHWcWinograd);
    const std::string workload = s.workload.substr(s.workload.find(' ') + 1);
    EXPECT_EQ(is_winograd, faster.count(workload) > 0) << s.workload << ": " << s.schedule;
    EXPECT_TRUE(s.tuned) << s.workload;
  }
  EXPECT_GT(winograd_steps(net), 0);
  const Tensor x = random_input(kSmall, 3);
  auto ref = graph::interpret(*model, {{"data", x}});
  auto out = exe->run({{"data", x}});
  ASSERT_TRUE(ref && out);
  EXPECT_LT(relative_error((*out)[0], (*ref)[0]), kTolerance);

  CompileOptions direct_only = with_records;
  direct_only.algorithms.excluded = {"winograd"};
  CompiledNetwork direct_net;
  ASSERT_TRUE(build(*model, direct_only, 1, &direct_net));
  EXPECT_EQ(winograd_steps(direct_net), 0);
  fs::remove(db);
}

}  // namespace
}  // namespace tensortune::driver
