#pragma once
/// \file
/// Compiling a whole network: the pass pipeline at an opt level with the records' block sizes,
/// then one step per fusion group. conv2d (groups 1, NCHW or NCHW[x]c) and dense become
/// generated kernels with their element-wise epilogue fused (per-channel add / multiply,
/// residual add / multiply, relu, clip); other element-wise chains become generated
/// vectorised loops; pooling, layout transforms and reshapes run as native loops; anything
/// else (grouped convolutions, matmul, softmax, int64 shape arithmetic, ...) runs the
/// interpreter's code, and the step says so.
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "compiler/driver/kernel_choice.h"
#include "compiler/graph/graph.h"
#include "compiler/runtime/compiled_network.h"
#include "schedule_space/template.h"

namespace tensortune::driver {

using NodeKernelObserver =
    std::function<void(const NodeKernelRequest&, const schedule_space::TemplateConfig&)>;

struct CompileOptions {
  /// "llvm" (or empty): object code for this CPU. "cuda", "cuda-smXY" or "cuda -arch=sm_XY":
  /// CUDA kernels for that compute capability ("cuda": sm_80), compiled on any machine.
  std::string target;
  int opt_level = 3;
  int threads = 1;
  /// A tensortune record DB or an AutoTVM log; empty: default configs (with a warning each).
  std::string records;
  /// Records of this device key only; empty: this host's (cuda: cuda-smXY of the target).
  std::string device_key;
  /// With a record DB: the graph-best records `tensortune graph-tune` left for this model (by
  /// graph_fingerprint and device key) choose their conv nodes first.
  bool use_graph_best = true;
  /// With records: choose among each workload's records with the layout transforms between
  /// layers in the cost (block_selection.h); false: every workload's fastest record.
  bool layout_aware = true;
  /// With records: a workload without one borrows the config of the nearest tuned workload
  /// (false: the template's default config).
  bool borrow_configs = true;
  /// Algorithms no node runs (e.g. "winograd"): among the rest, each node runs the template
  /// whose record measured fastest (kernel_choice.h).
  schedule_space::AlgorithmFilter algorithms;
  /// CPU targets: quantized convolutions (QDQ: dequantized uint8/int8 data and int8 weights)
  /// run the int8 templates' integer kernels where one serves them (FakeQuantizationToInteger);
  /// false: they compute in float32 on the dequantized values, as the model is written.
  bool integer_kernels = true;
  /// CUDA targets: lay the network out in the blocked CUDA templates' layouts (the CPU's
  /// NCHW[x]c, blocks from its records or default configs) instead of NCHW with
  /// the plain CUDA templates (AutoTVM's; the default).
  bool gpu_blocked_layout = false;
  /// CUDA targets: the products' precision of the float dense and batch matmul layers that a
  /// tensor-core template computes (schedule_space::at_precision); the rest, and every
  /// softmax, normalisation and reduction, stay float32. A CPU target refuses a reduced one.
  schedule_space::Precision precision = schedule_space::Precision::kFloat32;
  /// CPU targets: attention (MatMul, scale, mask, Softmax, MatMul) runs fused as one kernel
  /// (FuseAttention) where records do not decide (kernel_choice.h's attention_fused); false:
  /// unfused there, as two batch matmuls around a softmax.
  bool fuse_attention = true;
  /// Chooses a workload's kernel instead of the records (tests pick non-default ones).
  KernelOverride choose_kernel;
  /// Sees each conv2d and dense node's request and the kernel chosen for it (`tune --model`
  /// finds the layers that run at blocks their neighbours impose).
  NodeKernelObserver on_node_kernel;
  /// Called after every pass (`--print-after-each`).
  std::function<void(const std::string& pass, const graph::Graph&)> after_pass;
};

/// Dispatches on options.target; kInvalidArgument naming the target when it is none of those.
Expected<runtime::CompiledNetwork> compile_network(const graph::Graph& model,
                                                   const CompileOptions& options);

/// The compute capability a CUDA target names ("cuda": 80; "cuda-sm86", "cuda -arch=sm_86":
/// 86); nothing for "llvm" and ""; kInvalidArgument naming the text otherwise.
Expected<std::optional<int>> cuda_target_capability(const std::string& target);

/// compile_network for a CUDA target (compile_cuda.cc): NCHW kept and conv2d through
/// the plain CUDA conv2d template (or blocked layouts and templates: gpu_blocked_layout), dense
/// through dense_{small,large}_batch.gpu with the records' configs (the default config and a
/// warning where untuned), epilogues fused as on the CPU, generated element-wise, pooling and
/// depthwise kernels; everything else runs on the host.
Expected<runtime::CompiledNetwork> compile_network_cuda(const graph::Graph& model,
                                                        const CompileOptions& options,
                                                        int compute_capability);

/// The steps of an optimised, fused graph (no code generated): what compile_network does after
/// the passes. One step per fusion group, never split (FuseOps and lowering share
/// passes/fusion_rules.h); a multi-node group that no kernel computes is an internal error.
struct LoweredNetwork {
  graph::Graph graph{"graph"};
  std::vector<runtime::Step> steps;
  std::vector<graph::Tensor> params;
  std::vector<codegen::NamedKernel> kernels;
};
/// The kernel of each conv2d and dense node (KernelChooser::for_node).
using KernelChoiceFn =
    std::function<Expected<schedule_space::TemplateConfig>(const NodeKernelRequest&)>;
/// `vector_lanes`: the block of depthwise convolutions laid out plain. `row_kernels`: a
/// float softmax over the last axis and a float layer norm are generated kernels
/// (codegen::SoftmaxKernelSpec, LayerNormKernelSpec; back ends that generate them), else native
/// loops.
Expected<LoweredNetwork> lower_network(const graph::Graph& fused, const KernelChoiceFn& choose,
                                       int vector_lanes, bool row_kernels = false);

}  // namespace tensortune::driver
