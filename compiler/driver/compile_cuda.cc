// Implements compile_network for CUDA targets (compile.h): the pass pipeline with NCHW kept (the
// CUDA templates take AutoTVM's layouts) or, with gpu_blocked_layout, AlterOpLayout by the
// blocks of conv2d_NCHWc.cuda's configs; the CPU lowering's steps; one CUDA kernel per distinct
// kernel spec: conv2d and dense through their tuning templates with the records' configs, the
// rest from codegen/cuda/network_kernels.h. Runs on any machine; NVRTC, where
// present, checks the module and leaves its PTX in the artifact.
#include <chrono>
#include <map>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/cuda/network_kernels.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/tuned_configs.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/passes/passes.h"
#include "schedule_space/conv2d_cuda_template.h"
#include "schedule_space/dense_cuda_template.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "support/log.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/nvrtc.h"
#endif

namespace tensortune::driver {
using codegen::cuda::CudaKernelOptions;
using codegen::cuda::CudaKernelSource;
using runtime::CompiledNetwork;
using runtime::ScheduleUse;
using runtime::Step;

namespace ss = schedule_space;

namespace {

/// The channel block of depthwise convolutions (and what follows them) in the blocked layout:
/// four floats, one 16-byte load per thread.
constexpr int kGpuDepthwiseBlock = 4;

class CudaCodegen {
 public:
  CudaCodegen(int cc, TunedConfigs& tuned) : target_{ss::cuda_target_spec(cc), 1}, tuned_(tuned) {}

  /// The blocks of a conv2d's conv2d_NCHWc.cuda config (its best record's, else the default):
  /// what AlterOpLayout lays the network out by (the blocked layout).
  passes::ConvBlocks blocks_for(const ss::Conv2dWorkload& w) {
    const std::string described = ss::describe_workload(w);
    auto it = blocked_.find(described);
    if (it == blocked_.end()) {
      auto task = ss::make_task(ss::kConv2dNchwcCuda, w, target_);
      auto space = task ? ss::make_config_space(*task) : Expected<ss::ConfigSpace>(task.error());
      if (!space) return {1, 1};  // the lowering then reports the workload
      const TunedConfigs::ChosenConfig chosen = tuned_.config(*task, *space);
      const auto s = ss::conv2d_nchwc_cuda_schedule(w, *space, chosen.config);
      it = blocked_.emplace(described, Blocked{*task, *space, chosen.config, s.ic_bn, s.oc_bn})
               .first;
      const std::string name = task->template_name + " " + described;
      schedules_.emplace(name, ScheduleUse{name, space->describe(chosen.config), chosen.tuned, {}});
    }
    return {it->second.ic_bn, it->second.oc_bn};
  }

  /// The kernel of one lowered spec, named `entry`.
  Expected<CudaKernelSource> kernel(const codegen::NamedKernel& k) {
    if (const auto* c = std::get_if<codegen::ConvKernelSpec>(&k.spec)) {
      if (c->depthwise) return codegen::cuda::emit_depthwise_conv_kernel(*c, k.symbol);
      if (c->schedule.ic_bn == 1 && c->schedule.oc_bn == 1)  // NCHW
        return templated(ss::kConv2dNchwCuda, c->workload, c->epilogue, k.symbol);
      return blocked_conv(*c, k.symbol);
    }
    if (const auto* d = std::get_if<codegen::DenseKernelSpec>(&k.spec))
      return templated(ss::dense_cuda_template_for(d->workload.batch), d->workload, d->epilogue,
                       k.symbol);
    if (const auto* e = std::get_if<codegen::ElementwiseKernelSpec>(&k.spec))
      return codegen::cuda::emit_elementwise_kernel(*e, k.symbol);
    return codegen::cuda::emit_max_pool_kernel(std::get<codegen::MaxPoolKernelSpec>(k.spec),
                                               k.symbol);
  }

  std::vector<ScheduleUse> schedules() const {
    std::vector<ScheduleUse> out;
    for (const auto& [_, use] : schedules_) out.push_back(use);
    return out;
  }

 private:
  Expected<CudaKernelSource> templated(std::string_view template_name, const ss::Workload& workload,
                                       const std::vector<codegen::EpilogueOp>& epilogue,
                                       const std::string& entry) {
    TT_ASSIGN_OR_RETURN(ss::Task task,
                        ss::make_task(std::string(template_name), workload, target_));
    TT_ASSIGN_OR_RETURN(ss::ConfigSpace space, ss::make_config_space(task));
    const TunedConfigs::ChosenConfig chosen = tuned_.config(task, space);
    const std::string described = task.template_name + " " + ss::describe_workload(workload);
    schedules_.emplace(described,
                       ScheduleUse{described, space.describe(chosen.config), chosen.tuned, {}});
    CudaKernelOptions options;
    options.epilogue = epilogue;
    options.entry = entry;
    return codegen::cuda::emit_cuda_kernel(task, space, chosen.config, options);
  }

  /// conv2d_NCHWc.cuda in the blocks the lowering gave the kernel: the chosen config when its
  /// blocks are those (always, unless the graph fixed other blocks), else the first valid config
  /// with them.
  Expected<CudaKernelSource> blocked_conv(const codegen::ConvKernelSpec& c,
                                          const std::string& entry) {
    blocks_for(c.workload);
    const Blocked& b = blocked_.at(ss::describe_workload(c.workload));
    ss::Config config = b.config;
    if (b.ic_bn != c.schedule.ic_bn || b.oc_bn != c.schedule.oc_bn) {
      bool found = false;
      for (int64_t i = 0; i < b.space.size() && !found; ++i) {
        if (!b.space.is_valid_index(i)) continue;
        const ss::Config candidate = *b.space.config_at(i);
        const auto s = ss::conv2d_nchwc_cuda_schedule(c.workload, b.space, candidate);
        if (s.ic_bn == c.schedule.ic_bn && s.oc_bn == c.schedule.oc_bn) {
          config = candidate;
          found = true;
        }
      }
      if (!found)
        return internal_error("conv2d_NCHWc.cuda has no valid config with blocks " +
                              std::to_string(c.schedule.ic_bn) + "/" +
                              std::to_string(c.schedule.oc_bn) + " for " +
                              ss::describe_workload(c.workload));
    }
    CudaKernelOptions options;
    options.epilogue = c.epilogue;
    options.entry = entry;
    return codegen::cuda::emit_cuda_kernel(b.task, b.space, config, options);
  }

  struct Blocked {
    ss::Task task;
    ss::ConfigSpace space;
    ss::Config config;
    int64_t ic_bn = 1, oc_bn = 1;
  };

  ss::Target target_;
  TunedConfigs& tuned_;
  std::map<std::string, ScheduleUse> schedules_;
  std::map<std::string, Blocked> blocked_;  ///< by described workload (blocked layout only)
};

/// Global average pools and layout transforms run as generated kernels (out, data); reshapes
/// are copies the executors make themselves; the other native loops (transposes, slices,
/// row reductions, softmax) have no CUDA kernel yet and run interpreted.
void lower_native_steps(CompiledNetwork& net) {
  for (Step& step : net.steps) {
    if (step.kind != Step::Kind::kNative) continue;
    const graph::Node& n = net.graph.nodes()[step.nodes.at(0)];
    const graph::Shape& in = net.graph.type(n.inputs[0]).shape;
    const std::string symbol = "tt_gpu_native_" + std::to_string(net.gpu_kernels.size());
    if (n.op == graph::OpKind::kGlobalAvgPool2d) {
      net.gpu_kernels.push_back(codegen::cuda::emit_global_avg_pool_kernel(in, symbol));
    } else if (n.op == graph::OpKind::kLayoutTransform) {
      const auto a = graph::attrs_as<graph::LayoutTransformAttrs>(n.attrs);
      net.gpu_kernels.push_back(
          codegen::cuda::emit_layout_transform_kernel(in, a.from_block, a.to_block, symbol));
    } else if (n.op != graph::OpKind::kFlatten && n.op != graph::OpKind::kReshape &&
               n.op != graph::OpKind::kSqueeze && n.op != graph::OpKind::kUnsqueeze) {
      step.kind = Step::Kind::kInterpret;
      continue;
    } else {
      continue;
    }
    step.kind = Step::Kind::kKernel;
    step.symbol = symbol;
    step.args = {{runtime::ArgRef::Kind::kValue, n.output},
                 {runtime::ArgRef::Kind::kValue, n.inputs[0]}};
  }
}

/// NVRTC's PTX of the whole module, where this build and machine have NVRTC: a kernel that
/// does not compile is a bug of ours, reported here rather than on the GPU machine.
Expected<std::string> module_ptx(const CompiledNetwork& net) {
#ifdef TT_WITH_CUDA
  if (auto available = codegen::cuda::nvrtc_available(); !available) {
    logger("compiler")
        ->info("no PTX in the artifact ({}); the GPU loader compiles the source",
               available.error().message);
    return std::string();
  }
  CudaKernelSource module;
  module.entry = net.model.empty() ? "network" : net.model;
  module.source = net.gpu_source;
  TT_ASSIGN_OR_RETURN(auto out,
                      codegen::cuda::nvrtc_compile(module, net.compute_capability, false));
  return out.ptx;
#else
  logger("compiler")
      ->info(
          "no PTX in the artifact (built without the CUDA Toolkit); the GPU loader compiles the "
          "source");
  (void)net;
  return std::string();
#endif
}

}  // namespace

Expected<CompiledNetwork> compile_network_cuda(const graph::Graph& model,
                                               const CompileOptions& options, int cc) {
  const auto start = std::chrono::steady_clock::now();
  CompiledNetwork net;
  net.model = model.name();
  net.target = runtime::TargetKind::kCuda;
  net.compute_capability = cc;
  net.opt_level = options.opt_level;
  net.threads = options.threads;
  net.cpu = codegen::host_cpu();  // steps without a kernel run on the host

  TunedConfigs tuned;
  if (!options.records.empty()) {
    const std::string key =
        options.device_key.empty() ? "cuda-sm" + std::to_string(cc) : options.device_key;
    TT_ASSIGN_OR_RETURN(tuned, TunedConfigs::load(options.records, key, 1, false));
  }
  net.records_source = tuned.source();

  passes::PassContext ctx;
  ctx.opt_level = options.opt_level;
  ctx.after_pass = options.after_pass;
  CudaCodegen codegen(cc, tuned);
  passes::PipelineOptions pipeline;
  pipeline.alter_layout = options.gpu_blocked_layout;
  pipeline.layout.vector_lanes = kGpuDepthwiseBlock;
  pipeline.layout.choose_blocks = [&](const ss::Conv2dWorkload& w) {
    return codegen.blocks_for(w);
  };
  TT_ASSIGN_OR_RETURN(graph::Graph optimised,
                      passes::run_pipeline(passes::standard_pipeline(pipeline), model, ctx));
  // A lowered conv carries only its blocks here: its kernel comes from a CUDA template.
  const ScheduleFn blocks_only = [&](const ss::Conv2dWorkload& w) {
    ss::Conv2dSchedule s;
    if (options.gpu_blocked_layout) {
      const passes::ConvBlocks b = codegen.blocks_for(w);
      s.ic_bn = b.ic_bn;
      s.oc_bn = b.oc_bn;
    }
    return s;
  };
  TT_ASSIGN_OR_RETURN(LoweredNetwork lowered,
                      lower_network(optimised, blocks_only, 1, /*pack_dense_weights=*/false));
  net.graph = std::move(lowered.graph);
  net.steps = std::move(lowered.steps);
  net.params = std::move(lowered.params);

  for (const auto& k : lowered.kernels) {
    auto kernel = codegen.kernel(k);
    if (!kernel) return kernel.error().with_context("generating " + k.symbol);
    net.gpu_kernels.push_back(std::move(kernel).value());
  }
  lower_native_steps(net);
  net.schedules = codegen.schedules();
  for (const auto& k : net.gpu_kernels) {
    if (auto fits = ss::check_gpu_limits(k.usage(), ss::kUniversalGpuLimits); !fits)
      return fits.error().with_context("kernel " + k.entry);
    net.gpu_source += k.source + "\n";
  }
  TT_ASSIGN_OR_RETURN(net.gpu_ptx, module_ptx(net));

  int host_steps = 0;
  for (const auto& s : net.steps) host_steps += s.kind == Step::Kind::kInterpret;
  logger("compiler")
      ->info(
          "compiled {} for {} at opt level {}: {} steps, {} CUDA kernels, {} on the host, {:.1f} s",
          net.model, runtime::describe_target(net), net.opt_level, net.steps.size(),
          net.gpu_kernels.size(), host_steps,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return net;
}

}  // namespace tensortune::driver
