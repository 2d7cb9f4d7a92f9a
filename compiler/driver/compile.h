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

#include "compiler/graph/graph.h"
#include "compiler/runtime/compiled_network.h"
#include "schedule_space/conv2d_nchwc_template.h"

namespace tensortune::driver {

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
  /// With records: 3x3 stride-1 convolutions whose Winograd record measured faster than their
  /// direct one run the Winograd kernel (weights transformed at compile time); false: every
  /// convolution runs the direct template.
  bool winograd = true;
  /// CUDA targets: lay the network out in conv2d_NCHWc.cuda's blocked layouts (the CPU's
  /// NCHW[x]c, blocks from its records or default configs) instead of NCHW with
  /// conv2d_nchw.cuda (AutoTVM's; the default).
  bool gpu_blocked_layout = false;
  /// Chooses each conv2d_NCHWc schedule instead of the records (tests pick non-default ones).
  std::function<schedule_space::Conv2dSchedule(const schedule_space::Conv2dWorkload&)>
      conv_schedule;
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
/// conv2d_nchw.cuda (or blocked layouts and conv2d_NCHWc.cuda: gpu_blocked_layout), dense through
/// dense_{small,large}_batch.gpu with the records' configs (the default config and a warning where
/// untuned), epilogues fused as on the CPU, generated element-wise, pooling and depthwise kernels;
/// everything else runs on the host.
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
using ScheduleFn =
    std::function<schedule_space::Conv2dSchedule(const schedule_space::Conv2dWorkload&)>;
/// Conv schedules by node name (graph-tuned records), before ScheduleFn.
using NodeSchedules = std::map<std::string, schedule_space::Conv2dSchedule>;
/// `pack_dense_weights`: constant dense weights become parameters in the CPU kernel's packed
/// layout (false: they stay [N, K], as the CUDA dense templates read them).
Expected<LoweredNetwork> lower_network(const graph::Graph& fused, const ScheduleFn& conv_schedule,
                                       int vector_lanes, bool pack_dense_weights = true,
                                       const NodeSchedules& node_schedules = {});

}  // namespace tensortune::driver
