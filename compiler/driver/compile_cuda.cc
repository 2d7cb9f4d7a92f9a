// Implements compile_network for CUDA targets (compile.h): the pass pipeline with NCHW kept (the
// CUDA templates take AutoTVM's layouts) or, with gpu_blocked_layout, AlterOpLayout by the
// blocks of the blocked templates' configs; the CPU lowering's steps; one CUDA kernel per
// distinct kernel spec: conv2d and dense through the templates the records choose, the rest
// from codegen/cuda/network_kernels.h. Runs on any machine; NVRTC, where
// present, checks the module and leaves its PTX in the artifact.
#include <chrono>
#include <cmath>
#include <map>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/cuda/network_kernels.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/tuned_configs.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"
#include "compiler/passes/passes.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "support/log.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/nvrtc.h"
#include "support/stopwatch.h"
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

/// The CUDA source of one lowered kernel, named by its symbol.
Expected<CudaKernelSource> cuda_kernel(const codegen::NamedKernel& k) {
  if (const auto* t = std::get_if<codegen::TemplateKernelSpec>(&k.spec)) {
    CudaKernelOptions options;
    options.epilogue = t->epilogue;
    options.entry = k.symbol;
    options.inputs = t->kernel.tmpl().extra_inputs(t->kernel.task);
    return codegen::cuda::emit_cuda_kernel(t->kernel.task, t->kernel.space, t->kernel.config,
                                           options);
  }
  if (const auto* d = std::get_if<codegen::DepthwiseKernelSpec>(&k.spec))
    return codegen::cuda::emit_depthwise_conv_kernel(*d, k.symbol);
  if (const auto* e = std::get_if<codegen::ElementwiseKernelSpec>(&k.spec))
    return codegen::cuda::emit_elementwise_kernel(*e, k.symbol);
  if (const auto* s = std::get_if<codegen::SoftmaxKernelSpec>(&k.spec))
    return codegen::cuda::emit_softmax_kernel(*s, k.symbol);
  if (const auto* l = std::get_if<codegen::LayerNormKernelSpec>(&k.spec))
    return codegen::cuda::emit_layer_norm_kernel(*l, k.symbol);
  return codegen::cuda::emit_max_pool_kernel(std::get<codegen::MaxPoolKernelSpec>(k.spec),
                                             k.symbol);
}

/// Global average pools and layout transforms run as generated kernels (out, data); reshapes
/// are copies the executors make themselves; transposes and slices are strided-copy kernels;
/// the other native loops (reductions, concat, pads, a softmax not over the last axis) have no
/// CUDA kernel yet and run interpreted.
/// Softmax over the last axis and layer norm are row kernels already (lower_network).
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
    } else if (n.op == graph::OpKind::kTranspose || n.op == graph::OpKind::kSlice) {
      // Attention's head split and merge, and slices: the CPU's strided copies, on the device.
      const graph::StridedView v =
          n.op == graph::OpKind::kTranspose
              ? graph::transpose_view(in, graph::attrs_as<graph::TransposeAttrs>(n.attrs).perm)
              : [&] {
                  const auto a = graph::attrs_as<graph::SliceAttrs>(n.attrs);
                  return graph::slice_view(in, a.axes, a.starts, a.ends, a.steps);
                }();
      net.gpu_kernels.push_back(codegen::cuda::emit_strided_copy_kernel(
          net.graph.type(n.output).shape, v.strides, v.base, symbol));
    } else if (!graph::is_view_op(n.op)) {
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

/// The nodes whose constant weight holds a finite value beyond the precision's range (float16's
/// 65504: rounding would make it infinite), with that value: they keep float32, said at compile,
/// instead of a silent overflow. Activations are not known before run time.
std::map<std::string, float> weights_beyond_range(const graph::Graph& g, ss::Precision p) {
  std::map<std::string, float> out;
  if (p != ss::Precision::kFloat16) return out;  // bfloat16 and tf32 have float32's range
  constexpr float kLargestHalf = 65504.0f;
  for (const graph::Node& n : g.nodes()) {
    if (n.inputs.size() < 2 || !g.is_constant(n.inputs[1])) continue;
    const graph::Tensor* w = g.constant(n.inputs[1]);
    if (!w || !is_float(w->dtype)) continue;
    for (float v : w->f32)
      if (std::isfinite(v) && std::fabs(ss::round_to_precision(v, p)) > kLargestHalf) {
        out[n.name] = v;
        break;
      }
  }
  return out;
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
  const Stopwatch start;
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

  const ss::Target target{ss::cuda_target_spec(cc), 1};
  KernelChooser chooser(tuned, target, options.algorithms);
  chooser.set_override(options.choose_kernel);
  passes::PassContext ctx;
  ctx.opt_level = options.opt_level;
  ctx.after_pass = options.after_pass;
  passes::PipelineOptions pipeline;
  pipeline.alter_layout = options.gpu_blocked_layout;
  pipeline.pad_gemm_shapes = false;  // its pads and slices would be host steps
  pipeline.fuse.batch_matmul_served = [&](const ss::Workload& w) {
    return !ss::templates_for(w, ss::target_backend(target), options.algorithms).empty();
  };
  // Attention fuses where a template computes it at the compile's precision (the CUDA one
  // computes float32); at a reduced one its two matmuls run on the tensor cores instead.
  pipeline.attention = [&](const ss::Workload& w) {
    const auto* a = std::get_if<ss::AttentionWorkload>(&w);
    return a &&
           ss::precision_of(ss::at_precision(w, options.precision, ss::target_backend(target),
                                             options.algorithms)) == options.precision &&
           attention_fused(tuned, *a, target, options.algorithms, options.fuse_attention);
  };
  pipeline.layout.vector_lanes = kGpuDepthwiseBlock;
  pipeline.layout.target = target;
  pipeline.layout.choose_blocks = [&](const ss::Conv2dWorkload& w) {
    const auto [ic, oc] = chooser.layout_blocks(w);
    return passes::ConvBlocks{ic, oc};
  };
  TT_ASSIGN_OR_RETURN(graph::Graph optimised,
                      passes::run_pipeline(passes::standard_pipeline(pipeline), model, ctx));
  TT_RETURN_IF_ERROR(chooser.first_error());
  // Each node at the compile's precision where a tensor-core template computes it.
  const std::map<std::string, float> too_large = weights_beyond_range(optimised, options.precision);
  auto kernel_for = [&](NodeKernelRequest r) {
    if (auto beyond = too_large.find(r.node); beyond != too_large.end()) {
      logger("compiler")
          ->warn("node {} stays float32: its weight holds {}, beyond {}'s range", r.node,
                 beyond->second, ss::precision_name(options.precision));
    } else {
      r.workload = ss::at_precision(r.workload, options.precision, ss::target_backend(target),
                                    options.algorithms);
    }
    return chooser.for_node(r);
  };
  TT_ASSIGN_OR_RETURN(LoweredNetwork lowered,
                      lower_network(optimised, kernel_for, 1, /*row_kernels=*/true));
  net.graph = std::move(lowered.graph);
  net.steps = std::move(lowered.steps);
  net.params = std::move(lowered.params);

  for (const auto& k : lowered.kernels) {
    auto kernel = cuda_kernel(k);
    if (!kernel) return kernel.error().with_context("generating " + k.symbol);
    net.gpu_kernels.push_back(std::move(kernel).value());
  }
  lower_native_steps(net);
  net.schedules = chooser.uses();
  for (const auto& k : net.gpu_kernels) {
    // The limits of the target's architecture (dynamic shared memory beyond 48 KiB is its).
    if (auto fits =
            ss::check_gpu_limits(k.usage(), ss::limits_for_capability(net.compute_capability));
        !fits)
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
          net.gpu_kernels.size(), host_steps, start.seconds());
  return net;
}

}  // namespace tensortune::driver
