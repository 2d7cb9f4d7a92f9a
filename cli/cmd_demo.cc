// `tensortune demo`: what scripts/demo.sh runs.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/tuning_session.h"
#include "compiler/kernel.h"
#include "records/record_store.h"

namespace tensortune::cli {

namespace ss = schedule_space;

namespace {

struct DemoFlags {
  std::string db = "tensortune-demo.db";
  TuningFlags tuning;
};

ss::Conv2dWorkload resnet_conv(int64_t c, int64_t hw, int64_t oc, int64_t k, int64_t s) {
  ss::Conv2dWorkload w;
  w.in_channels = c;
  w.in_height = w.in_width = hw;
  w.out_channels = oc;
  w.kernel_h = w.kernel_w = k;
  w.stride_h = w.stride_w = s;
  const int64_t p = k / 2;
  w.pad_top = w.pad_left = w.pad_bottom = w.pad_right = p;
  return w;
}

Status run_demo(DemoFlags f) {
  const ss::Target target = compiler::host_target();
  struct Layer {
    const char* name;
    const char* tmpl;
    ss::Workload w;
  };
  const std::vector<Layer> layers = {
      {"res2 3x3 64->64 @56", ss::kConv2dNCHWc, resnet_conv(64, 56, 64, 3, 1)},
      {"res3 1x1/2 64->128 @56", ss::kConv2dNCHWc, resnet_conv(64, 56, 128, 1, 2)},
      {"res3 3x3 128->128 @28", ss::kConv2dNCHWc, resnet_conv(128, 28, 128, 3, 1)},
      {"res4 3x3 256->256 @14", ss::kConv2dNCHWc, resnet_conv(256, 14, 256, 3, 1)},
      {"res5 3x3 512->512 @7", ss::kConv2dNCHWc, resnet_conv(512, 7, 512, 3, 1)},
      {"fc 512->1000", ss::kDensePack, ss::DenseWorkload{1, 1000, 512}},
  };
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  std::printf("tensortune demo: tuning %zu ResNet-18 layers on this machine (%s, %s), %lld trials each, "
              "records in %s\n\n",
              layers.size(), target.spec.c_str(), compiler::host_device_key().c_str(),
              static_cast<long long>(f.tuning.trials), f.db.c_str());
  struct Row {
    const char* name;
    double best, fallback;
    int64_t trials;
  };
  std::vector<Row> rows;
  int number = 1;
  for (const Layer& l : layers) {
    TT_ASSIGN_OR_RETURN(ss::Task task, ss::make_task(l.tmpl, l.w, target));
    TT_ASSIGN_OR_RETURN(auto summary, tune_one_task(task, f.tuning, store.get(), number++, static_cast<int>(layers.size())));
    rows.push_back({l.name, summary.result.progress.best_gflops, 0, summary.result.progress.done});
  }
  std::printf("\n%-26s %12s %8s\n", "layer", "best GFLOPS", "trials");
  for (const Row& r : rows) std::printf("%-26s %12.2f %8lld\n", r.name, r.best, static_cast<long long>(r.trials));
  std::printf("\nNext: `tensortune records best --db %s` lists the best configs; rerun with a larger --trials to "
              "continue tuning from where this run stopped.\n",
              f.db.c_str());
  return ok_status();
}

}  // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<DemoFlags>();
  flags->tuning.trials = 24;
  flags->tuning.min_repeat_ms = 50;
  CLI::App* cmd = app.add_subcommand("demo", "Tune a few ResNet-18 layers and a dense layer on this machine and print a table");
  cmd->add_option("--db", flags->db, "SQLite record DB in the working folder")->capture_default_str();
  add_tuning_flags(*cmd, flags->tuning);
  cmd->callback([flags, &exit_code] {
    Status st = run_demo(*flags);
    exit_code = st.has_value() ? 0 : report_error(st.error());
  });
}

}  // namespace tensortune::cli
