// Implements compile_network (compile.h): passes, lowering, code generation.
#include "compiler/driver/compile.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/driver/block_selection.h"
#include "compiler/driver/tuned_configs.h"
#include "compiler/graph/printer.h"
#include "compiler/passes/passes.h"
#include "records/autotvm_log.h"
#include "records/record_store.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "support/log.h"

namespace tensortune::driver {
using runtime::CompiledNetwork;
using runtime::ScheduleUse;
using runtime::Step;
using runtime::step_kind_name;

namespace ss = schedule_space;

namespace {

std::string describe_schedule(const ss::Conv2dSchedule& s) {
  std::ostringstream os;
  if (const auto& w = s.winograd) {
    os << "winograd m=" << w->m << " ic_bn=" << w->ic_bn << " oc_bn=" << w->oc_bn
       << " reg_t=" << w->reg_t << " block_t=" << w->block_t;
    if (w->oc_split > 1) os << " oc_split=" << w->oc_split;
    if (w->prefetch) os << " prefetch=1";
    return os.str();
  }
  os << "ic_bn=" << s.ic_bn << " oc_bn=" << s.oc_bn << " reg_n=" << s.reg_n << " reg_h=" << s.reg_h
     << " unroll_kw=" << s.unroll_kw << " oc_inner=" << s.oc_inner;
  return os.str();
}

/// The DB's graph-best records of this model for the device key, by conv node; empty when the
/// file is not a record DB, the model was never graph-tuned there, or (with a warning) an
/// entry does not decode.
NodeSchedules load_graph_best(const std::string& path, const std::string& fingerprint,
                              const std::string& device_key, const ss::Target& target) {
  NodeSchedules out;
  auto store = records::RecordStore::open(path);
  if (!store) return out;  // an AutoTVM log
  auto entries = (*store)->graph_best(fingerprint, device_key);
  if (!entries) return out;
  for (const auto& e : *entries) {
    auto task = records::task_from_workload_key(e.workload_key, target.spec, target.vector_lanes);
    auto entity = records::entity_from_json(e.entity_json);
    const bool winograd = task && task->template_name == ss::kConv2dNCHWcWinograd;
    if (!task || !entity || (task->template_name != ss::kConv2dNCHWc && !winograd)) {
      logger("compiler")
          ->warn("{}: graph-best entry of node {} does not decode; ignored", path, e.node);
      continue;
    }
    const auto& w = std::get<ss::Conv2dWorkload>(task->workload);
    const ss::ConfigSpace space = winograd ? ss::conv2d_winograd_space(w, target.vector_lanes)
                                           : ss::conv2d_nchwc_space(w, target.vector_lanes);
    auto config = space.config_from_entity(*entity);
    if (!config || !space.is_valid(*config)) {
      logger("compiler")
          ->warn("{}: graph-best config of node {} is not valid here; ignored", path, e.node);
      continue;
    }
    if (winograd) {
      const ss::WinogradSchedule ws = ss::conv2d_winograd_schedule(space, *config);
      out[e.node] =
          ss::conv2d_nchwc_schedule_for_blocks(w, ws.ic_bn, ws.oc_bn, target.vector_lanes);
      out[e.node].winograd = ws;
      continue;
    }
    out[e.node] = ss::conv2d_nchwc_schedule(space, *config);
  }
  return out;
}

}  // namespace

Expected<std::optional<int>> cuda_target_capability(const std::string& target) {
  if (target.empty() || target == "llvm") return std::optional<int>();
  if (target == "cuda") return std::optional<int>(80);
  std::string spec = target;
  if (target.starts_with("cuda-sm")) spec = "cuda -arch=sm_" + target.substr(7);
  if (spec.starts_with("cuda ")) {
    auto cc = ss::cuda_compute_capability(spec);
    if (!cc) return invalid_argument("target = '" + target + "': " + cc.error().message);
    return std::optional<int>(*cc);
  }
  return invalid_argument("target = '" + target +
                          "' is not llvm, cuda, cuda-smXY or 'cuda -arch=sm_XY'");
}

Expected<CompiledNetwork> compile_network(const graph::Graph& model,
                                          const CompileOptions& options) {
  if (options.opt_level < 0 || options.opt_level > 3)
    return invalid_argument("opt_level = " + std::to_string(options.opt_level) +
                            ", must be in [0, 3]");
  if (options.threads < 1)
    return invalid_argument("threads = " + std::to_string(options.threads) +
                            ", must be at least 1");
  TT_ASSIGN_OR_RETURN(std::optional<int> cc, cuda_target_capability(options.target));
  if (cc) return compile_network_cuda(model, options, *cc);
  const auto start = std::chrono::steady_clock::now();
  CompiledNetwork net;
  net.model = model.name();
  net.opt_level = options.opt_level;
  net.threads = options.threads;
  net.cpu = codegen::host_cpu();
  const ss::Target target = codegen::host_target();

  // Every conv2d_NCHWc workload's schedule, chosen once: AlterOpLayout takes its blocks and
  // code generation the rest, so the two always agree.
  auto tuned = std::make_shared<driver::TunedConfigs>();
  if (!options.records.empty()) {
    TT_ASSIGN_OR_RETURN(
        *tuned, driver::TunedConfigs::load(
                    options.records,
                    options.device_key.empty() ? codegen::host_device_key() : options.device_key,
                    target.vector_lanes, options.borrow_configs, options.threads));
  }
  tuned->set_winograd(options.winograd);
  auto selection = std::make_shared<BlockSelection>();
  if (!options.records.empty() && options.layout_aware && !options.conv_schedule) {
    *selection = select_blocks(model, *tuned, target);
    if (selection->changed > 0)
      logger("compiler")
          ->info(
              "layout-aware records: {} of {} workloads take a slower record whose blocks match "
              "their neighbours' "
              "(estimated {:.2f} ms -> {:.2f} ms with layout transforms)",
              selection->changed, selection->chosen.size(), selection->fastest_cost_s * 1e3,
              selection->chosen_cost_s * 1e3);
  }
  net.records_source = options.conv_schedule ? "chosen by the caller" : tuned->source();
  // Graph-tuned records (tensortune graph-tune) choose per conv node, before everything else.
  NodeSchedules graph_best;
  if (!options.records.empty() && options.use_graph_best && !options.conv_schedule) {
    graph_best = load_graph_best(
        options.records, graph::graph_fingerprint(model),
        options.device_key.empty() ? codegen::host_device_key() : options.device_key, target);
    if (!graph_best.empty()) {
      logger("compiler")
          ->info("graph-best records for this model: {} conv nodes (from {})", graph_best.size(),
                 options.records);
      net.records_source += " (graph-best for " + std::to_string(graph_best.size()) + " nodes)";
    }
  }
  auto chosen = std::make_shared<std::map<std::string, ScheduleUse>>();
  ScheduleFn schedule = [&, tuned, chosen, selection](const ss::Conv2dWorkload& w) {
    const std::string described = ss::describe_workload(w);
    auto selected = selection->chosen.find(described);
    const ss::Conv2dSchedule s = options.conv_schedule ? options.conv_schedule(w)
                                 : selected != selection->chosen.end()
                                     ? selected->second
                                     : tuned->conv2d_schedule(w, target);
    const auto& fallbacks = tuned->fallbacks();
    const auto borrowed = tuned->borrowed().find(described);
    const bool is_borrowed = !options.conv_schedule && borrowed != tuned->borrowed().end();
    const bool tuned_record =
        options.conv_schedule || (!is_borrowed && std::find(fallbacks.begin(), fallbacks.end(),
                                                            described) == fallbacks.end());
    chosen->emplace(described, ScheduleUse{described, describe_schedule(s), tuned_record,
                                           is_borrowed ? borrowed->second : std::string()});
    return s;
  };

  passes::PassContext ctx;
  ctx.opt_level = options.opt_level;
  ctx.after_pass = options.after_pass;
  passes::PipelineOptions pipeline;
  pipeline.layout.vector_lanes = target.vector_lanes;
  pipeline.layout.choose_blocks = [&](const ss::Conv2dWorkload& w) {
    const auto s = schedule(w);
    return passes::ConvBlocks{s.ic_bn, s.oc_bn};
  };
  pipeline.layout.node_blocks = [&](const std::string& node) -> std::optional<passes::ConvBlocks> {
    auto it = graph_best.find(node);
    if (it == graph_best.end()) return std::nullopt;
    return passes::ConvBlocks{it->second.ic_bn, it->second.oc_bn};
  };
  TT_ASSIGN_OR_RETURN(graph::Graph optimised,
                      passes::run_pipeline(passes::standard_pipeline(pipeline), model, ctx));
  // At opt level 0 FuseOps (level 1) has not run: every node is a step of its own.
  TT_ASSIGN_OR_RETURN(LoweredNetwork lowered,
                      lower_network(optimised, schedule, target.vector_lanes, true, graph_best));
  for (auto& [_, use] : *chosen) net.schedules.push_back(use);
  for (const auto& [node, s] : graph_best)
    net.schedules.push_back({"node " + node + " (graph-best)", describe_schedule(s), true, {}});

  net.graph = std::move(lowered.graph);
  net.steps = std::move(lowered.steps);
  net.params = std::move(lowered.params);
  if (!lowered.kernels.empty()) {
    TT_ASSIGN_OR_RETURN(net.object_code,
                        codegen::compile_network_object(lowered.kernels, target.vector_lanes));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int interpreted = 0;
  for (const auto& s : net.steps) interpreted += s.kind == Step::Kind::kInterpret;
  logger("compiler")
      ->info("compiled {} at opt level {}: {} steps, {} kernels, {} interpreted, {:.1f} s",
             net.model, net.opt_level, net.steps.size(), lowered.kernels.size(), interpreted,
             seconds);
  return net;
}

}  // namespace tensortune::driver
