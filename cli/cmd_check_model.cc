// `tensortune check-model FILE.onnx`: will this model run, and how? Lists the file's
// operators with their support, imports it, and shows how the optimised graph's operators run
// (generated kernels, native loops or the interpreter). Exit 0 only when the model will run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/option_groups.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/tuned_configs.h"
#include "compiler/frontend/onnx_io.h"
#include "support/log.h"
#include "workflow/model_source.h"

namespace tensortune::cli {
namespace {

std::string value_text(const frontend::OnnxValueSummary& v) {
  std::string dims;
  for (const auto& d : v.dims) dims += (dims.empty() ? "" : ",") + d;
  return v.name + " " + v.dtype + "[" + dims + "]" +
         (v.supported_dtype ? "" : " (unsupported dtype)");
}

const char* kind_name(runtime::Step::Kind k) {
  switch (k) {
    case runtime::Step::Kind::kKernel:
      return "kernel";
    case runtime::Step::Kind::kNative:
      return "native";
    case runtime::Step::Kind::kInterpret:
      return "interpret";
  }
  return "?";
}

// Per IR operator of the optimised graph: how many of its nodes run as each step kind.
struct OpRuns {
  std::map<std::string, int> by_kind;
};

Status check_model(const workflow::ModelOptions& flags, bool json) {
  TT_ASSIGN_OR_RETURN(auto summary, frontend::summarize_onnx_file(flags.model, flags.limits));
  nlohmann::json out;
  int unsupported = 0;
  if (json) {
    out["file"] = flags.model;
    out["opset"] = summary.opset;
    out["producer"] = summary.producer;
    for (const auto& op : summary.ops)
      out["operators"].push_back({{"op", op.op_type},
                                  {"nodes", op.nodes},
                                  {"first_node", op.first_node},
                                  {"supported", op.supported}});
  } else {
    std::printf("%s: ONNX IR %lld, opset %lld, produced by %s\n", flags.model.c_str(),
                static_cast<long long>(summary.ir_version), static_cast<long long>(summary.opset),
                summary.producer.empty() ? "(unnamed)" : summary.producer.c_str());
    for (const auto& [domain, version] : summary.other_domains)
      std::printf("  also imports domain %s version %lld\n", domain.c_str(),
                  static_cast<long long>(version));
    for (const auto& v : summary.inputs) std::printf("  input   %s\n", value_text(v).c_str());
    for (const auto& v : summary.outputs) std::printf("  output  %s\n", value_text(v).c_str());
    std::string dtypes;
    for (const auto& d : summary.initializer_dtypes) dtypes += (dtypes.empty() ? "" : ", ") + d;
    std::printf("  weights %lld initializers, %.2f M values (%s)\n\n",
                static_cast<long long>(summary.initializers), summary.parameters / 1e6,
                dtypes.empty() ? "none" : dtypes.c_str());
    std::printf("  %-28s %6s  %s\n", "ONNX operator", "nodes", "import");
  }
  for (const auto& op : summary.ops) {
    unsupported += !op.supported;
    if (!json)
      std::printf("  %-28s %6d  %s\n", op.op_type.c_str(), op.nodes,
                  op.supported ? "supported"
                               : ("UNSUPPORTED (first node '" + op.first_node + "', opset " +
                                  std::to_string(summary.opset) + ")")
                                     .c_str());
  }

  // The import and the passes: the first error stops here and names node, op and opset.
  auto fail = [&](const Error& e) -> Status {
    if (json) {
      out["runs"] = false;
      out["error"] = e.message;
      std::printf("%s\n", out.dump(2).c_str());
      return Error{e.code, "the model will not run"};
    }
    return Error{e.code,
                 e.message + "\nthe model will not run" +
                     (unsupported ? " (" + std::to_string(unsupported) + " unsupported operator" +
                                        (unsupported > 1 ? "s" : "") + " above)"
                                  : "")};
  };
  // A range of sequence lengths: whether padding is exact (the plan, or the node it is not
  // at), then the rest of the check at the range's top length.
  auto range = workflow::sequence_range(flags);
  if (!range) return fail(range.error());
  if (*range) {
    auto plan = workflow::plan_model_range(flags);
    if (!plan)
      return fail(plan.error().with_context("lengths " + std::to_string((*range)->lo) + ".." +
                                            std::to_string((*range)->hi)));
    std::string masked, buckets;
    for (const auto& m : plan->masks) masked += (masked.empty() ? "" : ", ") + m.node;
    for (int64_t b : (*range)->buckets)
      buckets += (buckets.empty() ? "" : ", ") + std::to_string(b);
    if (json) {
      nlohmann::json masks = nlohmann::json::array();
      for (const auto& m : plan->masks) masks.push_back(m.node);
      out["sequence_range"] = {{"lo", (*range)->lo},
                               {"hi", (*range)->hi},
                               {"buckets", (*range)->buckets},
                               {"masked_softmax", masks},
                               {"output_sequence_axes", plan->output_axes}};
    } else {
      std::printf(
          "\n  lengths %lld..%lld: exact under padding; %zu buckets (%s), each length padded to "
          "the first at or above it; %zu softmax node%s over the tokens masked (%s)\n",
          static_cast<long long>((*range)->lo), static_cast<long long>((*range)->hi),
          (*range)->buckets.size(), buckets.c_str(), plan->masks.size(),
          plan->masks.size() == 1 ? "" : "s", masked.empty() ? "none" : masked.c_str());
    }
  }
  auto model =
      *range ? workflow::load_model_at_length(flags, (*range)->hi) : workflow::load_model(flags);
  if (!model) return fail(model.error());
  auto optimised = workflow::optimise_model(*model, flags);
  if (!optimised) return fail(optimised.error());
  const schedule_space::Target target = codegen::host_target();
  // Lowering takes default configs; their "no tuned record" warnings say nothing here.
  const auto compiler_log = logger("compiler");
  const auto level = compiler_log->level();
  compiler_log->set_level(spdlog::level::err);
  driver::TunedConfigs defaults;
  driver::KernelChooser chooser(defaults, target, {});
  auto lowered = driver::lower_network(
      *optimised, [&](const driver::NodeKernelRequest& r) { return chooser.for_node(r); },
      target.vector_lanes, /*row_kernels=*/true);  // as `compile` lowers for this CPU
  compiler_log->set_level(level);
  if (!lowered) return fail(lowered.error());

  std::map<std::string, OpRuns> runs;
  int interpreted_steps = 0;
  for (const auto& step : lowered->steps) {
    interpreted_steps += step.kind == runtime::Step::Kind::kInterpret;
    for (int node : step.nodes)
      ++runs[graph::op_name(lowered->graph.nodes()[node].op)].by_kind[kind_name(step.kind)];
  }
  if (json) {
    for (const auto& [op, r] : runs) out["compiled"][op] = r.by_kind;
    out["steps"] = lowered->steps.size();
    out["interpreted_steps"] = interpreted_steps;
    out["runs"] = true;
    std::printf("%s\n", out.dump(2).c_str());
    return ok_status();
  }
  std::printf("\n  after import and the passes of opt level %d: %zu steps, %d interpreted\n",
              flags.opt_level, lowered->steps.size(), interpreted_steps);
  std::printf("  %-28s %6s  %s\n", "IR operator", "nodes", "runs as");
  for (const auto& [op, r] : runs) {
    int total = 0;
    std::string how;
    for (const auto& [kind, n] : r.by_kind) {
      total += n;
      how += (how.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
    }
    std::printf("  %-28s %6d  %s\n", op.c_str(), total, how.c_str());
  }
  std::printf("\nthe model runs%s\n",
              interpreted_steps ? " (interpreted steps run the reference interpreter's loops: "
                                  "`tensortune bench --profile` shows their share)"
                                : ": every step is compiled");
  return ok_status();
}

}  // namespace

void add_check_model_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<workflow::ModelOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "check-model",
      "Say whether an ONNX model will run: its operators, dtypes and shapes, what is supported, "
      "compiled or interpreted");
  add_model_flags(cmd, *flags, false, false);
  cmd->add_option("file", flags->model, "the ONNX model (or --model FILE)");
  cmd->add_option("--opt-level", flags->opt_level, "the passes to run before lowering")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd->add_flag("--json", *json, "print one JSON object instead of the tables");
  cmd->footer(
      "\nExamples:\n  tensortune check-model resnet50.onnx\n"
      "  tensortune check-model bert.onnx --input-shape input_ids=1x128\n"
      "  tensortune check-model bert.onnx --input-shape input_ids=1x1..512 --input-shape "
      "attention_mask=1x1..512   (can it take every length?)\n"
      "Exit status: 0 when the model will run (import, passes and lowering succeed), 1 with the "
      "first error otherwise (it names the node, the operator and the opset).");
  cmd->callback([&exit_code, flags, json] {
    if (flags->model.empty()) {
      exit_code = report_error(invalid_argument("check-model needs an ONNX file"));
      return;
    }
    if (Status s = check_model(*flags, *json); !s) exit_code = report_error(s.error());
  });
}

}  // namespace tensortune::cli
