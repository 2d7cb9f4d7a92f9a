// Whole-model commands: `tasks`, `inspect` and `export-onnx`.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "cli/option_groups.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/graph/printer.h"
#include "tuner/task_extraction.h"
#include "workflow/model_source.h"
#include "workflow/model_tasks.h"
#include "workflow/op_task.h"

namespace tensortune::cli {
namespace {

namespace ss = schedule_space;

// The tune-op flags that describe a task's workload.
std::string tune_op_flags(const ss::Task& task) {
  const std::string op = std::string(ss::template_of(task).op_name());
  const ss::Precision precision = ss::precision_of(task.workload);
  const std::string target = (ss::template_of(task).target_kind().runs_on_gpu()
                                  ? " --target " + workflow::device_key_for(task.target)
                                  : "") +
                             (ss::is_reduced_float(precision)
                                  ? std::string(" --precision ") + ss::precision_name(precision)
                                  : "");
  auto list = [](std::initializer_list<int64_t> v, char sep) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : std::string(1, sep)) + std::to_string(x);
    return s;
  };
  if (const auto* c = std::get_if<ss::Conv2dWorkload>(&task.workload))
    return "--op " + op + target + " --data " +
           list({c->batch, c->in_channels, c->in_height, c->in_width}, 'x') + " --kernel " +
           list({c->out_channels, c->in_channels / c->groups, c->kernel_h, c->kernel_w}, 'x') +
           " --strides " + list({c->stride_h, c->stride_w}, ',') + " --pads " +
           list({c->pad_top, c->pad_left, c->pad_bottom, c->pad_right}, ',') + " --dilation " +
           list({c->dilation_h, c->dilation_w}, ',');
  if (const auto* b = std::get_if<ss::BatchMatmulWorkload>(&task.workload))
    return "--op " + op + target + " --data " + list({b->batch, b->m, b->k}, 'x') + " --weight " +
           (b->transpose_b ? list({b->batch, b->n, b->k}, 'x')
                           : list({b->batch, b->k, b->n}, 'x') + " --weight-kn");
  if (const auto* a = std::get_if<ss::AttentionWorkload>(&task.workload)) {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%.9g", a->scale);
    return "--op " + op + target + " --data " + list({a->batch, a->m, a->k}, 'x') + " --weight " +
           list({a->batch, a->k, a->n}, 'x') + " --value-dim " + std::to_string(a->dv) +
           (a->has_mask() ? " --mask " + list({a->mask_batch, a->mask_rows, a->n}, 'x') : "") +
           " --scale " + scale;
  }
  const auto& d = std::get<ss::DenseWorkload>(task.workload);
  return "--op " + op + target + " --data " + list({d.batch, d.in_features}, 'x') + " --weight " +
         list({d.out_features, d.in_features}, 'x');
}

Status list_tasks(const workflow::ModelOptions& flags, const std::string& target_flag, bool json) {
  TT_ASSIGN_OR_RETURN(ss::Target target, workflow::op_target(target_flag));
  TT_ASSIGN_OR_RETURN(auto extraction, workflow::extract_model_tasks(flags, target));
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& t : extraction.tasks)
      out.push_back({{"template", t.task.template_name},
                     {"workload", ss::describe_workload(t.task.workload)},
                     {"workload_key", t.workload_key},
                     {"flop", ss::task_flop(t.task)},
                     {"nodes", t.nodes}});
    std::printf(
        "%s\n",
        nlohmann::json{{"model", flags.model}, {"tasks", out}, {"untunable", extraction.untunable}}
            .dump(2)
            .c_str());
    return ok_status();
  }
  // A task whose layers an earlier task already computes is another template's alternative.
  std::set<std::string> covered;
  std::vector<bool> alternative;
  for (const auto& t : extraction.tasks) {
    alternative.push_back(covered.count(t.nodes.front()) > 0);
    covered.insert(t.nodes.begin(), t.nodes.end());
  }
  const auto alternatives = std::count(alternative.begin(), alternative.end(), true);
  std::printf("%d tasks in %s (target %s)\n", static_cast<int>(extraction.tasks.size()),
              flags.model.c_str(), target.spec.c_str());
  if (alternatives > 0)
    std::printf(
        "(%d of them alternatives (another template, e.g. Winograd) to a task above them for the "
        "same layers: tuning measures both, compile takes the faster per layer)\n",
        static_cast<int>(alternatives));
  // Columns as wide as their longest entry.
  int name_width = 8, workload_width = 8;
  for (const auto& t : extraction.tasks) {
    name_width = std::max(name_width, static_cast<int>(t.task.template_name.size()));
    workload_width =
        std::max(workload_width, static_cast<int>(ss::describe_workload(t.task.workload).size()));
  }
  std::printf("%3s  %-*s %-*s %9s %5s  %s\n", "#", name_width, "template", workload_width,
              "workload", "MFLOP", "uses", "first node");
  double total = 0;
  for (size_t i = 0; i < extraction.tasks.size(); ++i) {
    const auto& t = extraction.tasks[i];
    const double flop = ss::task_flop(t.task);
    // An alternative computes the same layers: count their work once.
    if (!alternative[i]) total += flop * t.nodes.size();
    std::printf("%3zu  %-*s %-*s %9.1f %5zu  %s\n", i + 1, name_width, t.task.template_name.c_str(),
                workload_width, ss::describe_workload(t.task.workload).c_str(), flop / 1e6,
                t.nodes.size(), t.nodes.front().c_str());
  }
  std::printf("%.3f GFLOP in tunable operators per run\n", total / 1e9);
  for (const auto& u : extraction.untunable) std::printf("not tunable: %s\n", u.c_str());
  std::string shapes;  // the model as this command was given it
  for (const auto& s : flags.input_shapes) shapes += " --input-shape " + s;
  if (!extraction.tasks.empty())
    std::printf(
        "Tune them all with `tensortune tune --model %s%s%s%s --tuner xgb`, or task 1 alone with:\n"
        "  tensortune tune-op %s --tuner xgb --trials 200\n"
        "(--json prints every task's workload key)\n",
        flags.model.c_str(), shapes.c_str(),
        ss::target_kind_of(extraction.tasks.front().task.target).runs_on_gpu()
            ? (" --target " + target_flag).c_str()
            : "",
        flags.precision.empty() ? "" : (" --precision " + flags.precision).c_str(),
        tune_op_flags(extraction.tasks.front().task).c_str());
  return ok_status();
}

Status inspect(const workflow::ModelOptions& flags) {
  TT_ASSIGN_OR_RETURN(graph::Graph model, workflow::load_model(flags));
  TT_ASSIGN_OR_RETURN(graph::Graph optimised, workflow::optimise_model(model, flags));
  std::printf("%s", graph::print_graph(optimised).c_str());
  if (!flags.print_after_each)
    std::printf("(opt level %d; before passes: %s)\n", flags.opt_level,
                graph::graph_summary(model).c_str());
  return ok_status();
}

}  // namespace

void add_model_commands(CLI::App& app, int& exit_code) {
  auto tasks_flags = std::make_shared<workflow::ModelOptions>();
  auto json = std::make_shared<bool>(false);
  auto tasks_target = std::make_shared<std::string>("llvm");
  CLI::App* tasks = app.add_subcommand(
      "tasks", "List the tunable tasks of a model (deduplicated, with workload keys)");
  add_model_flags(tasks, *tasks_flags, false);
  tasks->add_flag("--json", *json, "print JSON with workload keys instead of a table");
  add_algorithm_flags(tasks, tasks_flags->excluded_algorithms,
                      "list no tasks of its templates (by default a 3x3 stride-1 conv has a "
                      "Winograd task beside its direct one)");
  tasks->add_flag("--no-int8", tasks_flags->no_int8,
                  "a quantized (QDQ) model's convolutions as float tasks, as `compile --no-int8` "
                  "runs them (by default they are conv2d_NCHWc_int8 tasks)");
  tasks
      ->add_option("--target", *tasks_target,
                   "llvm (this CPU) or cuda / cuda-smXY: which templates the tasks take")
      ->capture_default_str();
  add_precision_flag(tasks, tasks_flags->precision, "the tasks compile --precision runs");
  tasks->footer(
      "\nExamples:\n  tensortune tasks --model resnet-18\n"
      "  tensortune tasks --model model.onnx --input-shape input=1x3x224x224 --json");
  tasks->callback([&exit_code, tasks_flags, tasks_target, json] {
    if (Status s = list_tasks(*tasks_flags, *tasks_target, *json); !s)
      exit_code = report_error(s.error());
  });

  auto inspect_flags = std::make_shared<workflow::ModelOptions>();
  CLI::App* insp =
      app.add_subcommand("inspect", "Print a model's graph after the passes of an opt level");
  add_model_flags(insp, *inspect_flags, true);
  insp->footer(
      "\nExamples:\n  tensortune inspect --model resnet-18 --opt-level 3\n"
      "  tensortune inspect --model mobilenet-v1 --opt-level 3 --print-after-each\n"
      "Rule: a pipeline runs the passes whose level is <= --opt-level; each pass's "
      "prerequisites run with it.");
  insp->callback([&exit_code, inspect_flags] {
    if (Status s = inspect(*inspect_flags); !s) exit_code = report_error(s.error());
  });

  auto export_flags = std::make_shared<workflow::ModelOptions>();
  auto path = std::make_shared<std::string>();
  CLI::App* e =
      app.add_subcommand("export-onnx", "Write a model (a zoo model, typically) as an ONNX file");
  add_model_flags(e, *export_flags, false);
  e->add_option("-o,--output", *path, "the .onnx file to write")->required();
  e->footer("\nExample:\n  tensortune export-onnx --model resnet-18 -o resnet18.onnx");
  e->callback([&exit_code, export_flags, path] {
    auto model = workflow::load_model(*export_flags);
    Status s = model ? frontend::export_onnx(*model, *path) : Status(model.error());
    if (!s) {
      exit_code = report_error(s.error());
      return;
    }
    std::printf("wrote %s (%s)\n", path->c_str(), graph::graph_summary(*model).c_str());
  });
}

}  // namespace tensortune::cli
