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
#include "records/record_decoding.h"
#include "records/record_store.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "support/log.h"
#include "support/stopwatch.h"

namespace tensortune::driver {
using runtime::CompiledNetwork;
using runtime::ScheduleUse;
using runtime::Step;
using runtime::step_kind_name;

namespace ss = schedule_space;

namespace {

/// The DB's graph-best records of this model for the device key, by conv node; empty when the
/// file is not a record DB or the model was never graph-tuned there; an entry that does not
/// decode is warned about and left out.
std::map<std::string, ss::TemplateConfig> load_graph_best(const std::string& path,
                                                          const std::string& fingerprint,
                                                          const std::string& device_key,
                                                          const ss::Target& target) {
  std::map<std::string, ss::TemplateConfig> out;
  auto store = records::RecordStore::open(path);
  if (!store) return out;  // an AutoTVM log
  auto entries = (*store)->graph_best(fingerprint, device_key);
  if (!entries) return out;
  for (const auto& e : *entries) {
    auto kernel = records::decode_record(e.workload_key, e.entity_json, target);
    if (!kernel) {
      logger("compiler")
          ->warn("{}: graph-best entry of node {} does not decode ({}); ignored", path, e.node,
                 kernel.error().message);
      continue;
    }
    out.emplace(e.node, std::move(*kernel));
  }
  return out;
}

}  // namespace

Expected<std::optional<int>> cuda_target_capability(const std::string& target) {
  TT_ASSIGN_OR_RETURN(const ss::TargetFlag flag, ss::parse_target_flag(target));
  if (!flag.kind->runs_on_gpu()) return std::optional<int>();
  TT_ASSIGN_OR_RETURN(const int cc, ss::cuda_compute_capability(flag.spec));
  return std::optional<int>(cc);
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
  if (ss::is_reduced_float(options.precision) && (!cc || *cc < 80))
    return invalid_argument(std::string("precision ") + ss::precision_name(options.precision) +
                            " runs on the tensor cores of a CUDA target of sm_80 or newer; the "
                            "target is '" +
                            (options.target.empty() ? std::string("llvm") : options.target) + "'");
  if (cc) return compile_network_cuda(model, options, *cc);
  const Stopwatch start;
  CompiledNetwork net;
  net.model = model.name();
  net.opt_level = options.opt_level;
  net.threads = options.threads;
  net.cpu = codegen::host_cpu();
  const ss::Target target = codegen::host_target();

  // Every node's kernel, chosen once: AlterOpLayout takes its blocks and code generation the
  // rest, so the two always agree.
  auto tuned = std::make_shared<driver::TunedConfigs>();
  if (!options.records.empty()) {
    TT_ASSIGN_OR_RETURN(
        *tuned, driver::TunedConfigs::load(
                    options.records,
                    options.device_key.empty() ? codegen::host_device_key() : options.device_key,
                    target.vector_lanes, options.borrow_configs, options.threads));
  }
  KernelChooser chooser(*tuned, target, options.algorithms);
  chooser.set_override(options.choose_kernel);
  // The quantized operators that run in integers: those a template of the target serves.
  auto served = [&](const ss::Workload& w) {
    return !ss::templates_for(w, ss::target_backend(target), options.algorithms).empty();
  };
  if (!options.records.empty() && options.layout_aware && !options.choose_kernel) {
    TT_ASSIGN_OR_RETURN(
        graph::Graph seen,
        convolutions_as_compiled(model, target, options.integer_kernels, options.algorithms));
    BlockSelection selection = select_blocks(seen, *tuned, target, options.algorithms);
    if (selection.changed > 0)
      logger("compiler")
          ->info(
              "layout-aware records: {} of {} workloads take a slower record whose blocks match "
              "their neighbours' "
              "(estimated {:.2f} ms -> {:.2f} ms with layout transforms)",
              selection.changed, selection.chosen.size(), selection.fastest_cost_s * 1e3,
              selection.chosen_cost_s * 1e3);
    chooser.set_selection(std::move(selection.chosen));
  }
  net.records_source = options.choose_kernel ? "chosen by the caller" : tuned->source();
  // Graph-tuned records (tensortune graph-tune) choose per conv node, before everything else.
  if (!options.records.empty() && options.use_graph_best && !options.choose_kernel) {
    auto graph_best = load_graph_best(
        options.records, graph::graph_fingerprint(model),
        options.device_key.empty() ? codegen::host_device_key() : options.device_key, target);
    if (!graph_best.empty()) {
      logger("compiler")
          ->info("graph-best records for this model: {} conv nodes (from {})", graph_best.size(),
                 options.records);
      net.records_source += " (graph-best for " + std::to_string(graph_best.size()) + " nodes)";
    }
    chooser.set_node_choices(std::move(graph_best));
  }

  passes::PassContext ctx;
  ctx.opt_level = options.opt_level;
  ctx.after_pass = options.after_pass;
  passes::PipelineOptions pipeline;
  pipeline.layout.vector_lanes = target.vector_lanes;
  pipeline.layout.target = target;
  if (options.integer_kernels) pipeline.integer_ops = served;
  pipeline.fuse.store_midway = true;  // LLVM's kernels store a value midway (kStoreTensor)
  pipeline.fuse.dequantize_in_epilogue = true;  // and read byte operands (kAddDequantized)
  pipeline.fuse.gelu_in_epilogue = true;        // and compute GELU (kGelu, kGeluTanh)
  pipeline.fuse.batch_matmul_served = [&](const ss::Workload& w) {
    return !ss::templates_for(w, ss::target_backend(target), options.algorithms).empty();
  };
  pipeline.attention = [&](const ss::Workload& w) {
    const auto* a = std::get_if<ss::AttentionWorkload>(&w);
    return a && attention_fused(*tuned, *a, target, options.algorithms, options.fuse_attention);
  };
  pipeline.layout.choose_blocks = [&](const ss::Conv2dWorkload& w) {
    const auto [ic, oc] = chooser.layout_blocks(w);
    return passes::ConvBlocks{ic, oc};
  };
  pipeline.layout.depthwise_blocks =
      [&](const ss::Conv2dWorkload& w) -> std::optional<passes::ConvBlocks> {
    const auto blocks = chooser.tuned_blocks(w);
    if (!blocks) return std::nullopt;
    return passes::ConvBlocks{blocks->first, blocks->second};
  };
  pipeline.layout.node_blocks = [&](const std::string& node) -> std::optional<passes::ConvBlocks> {
    const ss::TemplateConfig* k = chooser.node_choice(node);
    if (!k) return std::nullopt;
    const ss::KernelSignature sig = k->signature();
    return passes::ConvBlocks{sig.ic_block, sig.oc_block};
  };
  TT_ASSIGN_OR_RETURN(graph::Graph optimised,
                      passes::run_pipeline(passes::standard_pipeline(pipeline), model, ctx));
  TT_RETURN_IF_ERROR(chooser.first_error());
  // At opt level 0 FuseOps (level 1) has not run: every node is a step of its own.
  TT_ASSIGN_OR_RETURN(LoweredNetwork lowered, lower_network(
                                                  optimised,
                                                  [&](const NodeKernelRequest& r) {
                                                    auto k = chooser.for_node(r);
                                                    if (k && options.on_node_kernel)
                                                      options.on_node_kernel(r, *k);
                                                    return k;
                                                  },
                                                  target.vector_lanes,
                                                  /*row_kernels=*/true));
  net.schedules = chooser.uses();

  net.graph = std::move(lowered.graph);
  net.steps = std::move(lowered.steps);
  net.params = std::move(lowered.params);
  if (!lowered.kernels.empty()) {
    TT_ASSIGN_OR_RETURN(net.object_code,
                        codegen::compile_network_object(lowered.kernels, target.vector_lanes));
  }
  const double seconds = start.seconds();
  int interpreted = 0;
  for (const auto& s : net.steps) interpreted += s.kind == Step::Kind::kInterpret;
  logger("compiler")
      ->info("compiled {} at opt level {}: {} steps, {} kernels, {} interpreted, {:.1f} s",
             net.model, net.opt_level, net.steps.size(), lowered.kernels.size(), interpreted,
             seconds);
  return net;
}

}  // namespace tensortune::driver
