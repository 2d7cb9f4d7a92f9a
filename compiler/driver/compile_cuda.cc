// Implements compile_network for CUDA targets (compile.h): the pass pipeline with NCHW kept
// (the CUDA templates take AutoTVM's layouts), the CPU lowering's steps, and one CUDA kernel per
// distinct kernel spec: conv2d and dense through their tuning templates with the records'
// configs, the rest from codegen/cuda/network_kernels.h. Runs on any machine; NVRTC, where
// present, checks the module and leaves its PTX in the artifact.
#include <chrono>
#include <map>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/cuda/network_kernels.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/tuned_configs.h"
#include "compiler/passes/passes.h"
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

class CudaCodegen {
 public:
  CudaCodegen(int cc, TunedConfigs& tuned) : target_{ss::cuda_target_spec(cc), 1}, tuned_(tuned) {}

  /// The kernel of one lowered spec, named `entry`.
  Expected<CudaKernelSource> kernel(const codegen::NamedKernel& k) {
    if (const auto* c = std::get_if<codegen::ConvKernelSpec>(&k.spec)) {
      if (c->depthwise) return codegen::cuda::emit_depthwise_conv_kernel(*c, k.symbol);
      if (c->schedule.ic_bn != 1 || c->schedule.oc_bn != 1)
        return internal_error("a blocked conv2d reached the CUDA back end (AlterOpLayout ran)");
      return templated(ss::kConv2dNchwCuda, c->workload, c->epilogue, k.symbol);
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

  ss::Target target_;
  TunedConfigs& tuned_;
  std::map<std::string, ScheduleUse> schedules_;
};

/// A global average pool runs as a generated kernel (out, data); the other native steps
/// (reshapes) are copies the executors make themselves.
void lower_global_pools(CompiledNetwork& net) {
  for (Step& step : net.steps) {
    if (step.kind != Step::Kind::kNative) continue;
    const graph::Node& n = net.graph.nodes()[step.nodes.at(0)];
    if (n.op != graph::OpKind::kGlobalAvgPool2d) continue;
    step.kind = Step::Kind::kKernel;
    step.symbol = "tt_gpu_pool_" + std::to_string(net.gpu_kernels.size());
    step.args = {{runtime::ArgRef::Kind::kValue, n.output},
                 {runtime::ArgRef::Kind::kValue, n.inputs[0]}};
    net.gpu_kernels.push_back(
        codegen::cuda::emit_global_avg_pool_kernel(net.graph.type(n.inputs[0]).shape, step.symbol));
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
  passes::PipelineOptions pipeline;
  pipeline.alter_layout = false;
  TT_ASSIGN_OR_RETURN(graph::Graph optimised,
                      passes::run_pipeline(passes::standard_pipeline(pipeline), model, ctx));
  // The CPU schedule of a lowered conv is unused here: its kernel comes from the CUDA template.
  const ScheduleFn no_cpu_schedule = [](const ss::Conv2dWorkload&) { return ss::Conv2dSchedule{}; };
  TT_ASSIGN_OR_RETURN(LoweredNetwork lowered,
                      lower_network(optimised, no_cpu_schedule, 1, /*pack_dense_weights=*/false));
  net.graph = std::move(lowered.graph);
  net.steps = std::move(lowered.steps);
  net.params = std::move(lowered.params);

  CudaCodegen codegen(cc, tuned);
  for (const auto& k : lowered.kernels) {
    auto kernel = codegen.kernel(k);
    if (!kernel) return kernel.error().with_context("generating " + k.symbol);
    net.gpu_kernels.push_back(std::move(kernel).value());
  }
  lower_global_pools(net);
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
