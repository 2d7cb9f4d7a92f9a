#pragma once
/// \file
/// A compiled network: the optimised graph, one step per fusion group (a generated kernel, a
/// native loop, or the interpreter's code for what has no kernel), the parameters the
/// kernels read in their packed layouts, the object code, and where it came from (target CPU,
/// opt level, records). This is what `tensortune compile` writes and `run`/`bench` load.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/llvm/network_kernels.h"
#include "compiler/graph/graph.h"
#include "support/error.h"

namespace tensortune::runtime {

/// A kernel argument: a value of the graph (input, constant or intermediate) or a parameter
/// made at compile time (packed weights, per-channel epilogue vectors).
struct ArgRef {
  enum class Kind { kValue, kParam };
  Kind kind = Kind::kValue;
  int index = 0;
  friend bool operator==(const ArgRef&, const ArgRef&) = default;
};

struct Step {
  /// kKernel: generated code (conv2d_NCHWc, dense, element-wise chains); kNative: a built-in
  /// loop over raw buffers (pooling, layout transforms, reshapes); kInterpret: the reference
  /// interpreter's code, for operators without a kernel (counted and reported, never silent).
  enum class Kind { kKernel, kNative, kInterpret };
  Kind kind = Kind::kKernel;
  std::string label;       ///< "conv2d_nchwc+add+relu": the group's operators
  std::vector<int> nodes;  ///< the group's node indices, in execution order
  graph::ValueId output = graph::kNoValue;
  std::string symbol;  ///< kKernel: the object code's symbol, or the GPU kernel's entry
  int64_t extent = 0;  ///< kKernel: the parallel loop extent (CPU kernels)
  std::vector<ArgRef>
      args;         ///< kKernel: in the ABI order of compiler/codegen/llvm/network_kernels.h
  double flop = 0;  ///< of the anchor, 0 when not counted
  /// kKernel, where its template says how its parallel loop walks the output's rows
  /// (KernelSignature::rows_per_block): the walk, and whether those rows are the sequence's
  /// tokens in a ranged network's bucket (then a shorter sequence runs only its row blocks and
  /// the rest of the output is zeroed: Executable::set_active_rows).
  int64_t rows_per_block = 0, row_blocks = 0, row_inner = 1;
  bool rows_follow_sequence = false;
};

/// One tuned workload's schedule and where it came from.
struct ScheduleUse {
  /// The template's name and the described workload ("TEMPLATE conv2d 1x64x56x56 k64x3x3
  /// s1 p1111"), or "node NAME (graph-best)".
  std::string workload;
  std::string schedule;       ///< the config's knobs (ConfigSpace::describe)
  bool tuned = false;         ///< false: the default config (warned about at compile time)
  std::string borrowed_from;  ///< not tuned but borrowed from this tuned workload (described)
};

/// What a network is compiled for.
enum class TargetKind { kCpu, kCuda };

struct CompiledNetwork {
  std::string model;
  TargetKind target = TargetKind::kCpu;
  /// kCuda: the compute capability the kernels are for (80 = sm_80).
  int compute_capability = 0;
  int opt_level = 3;
  int threads = 1;  ///< the default thread count for run and bench
  codegen::CpuDescription cpu;
  std::string records_source;
  std::vector<ScheduleUse> schedules;
  graph::Graph graph{"graph"};  ///< after the passes, fused
  std::vector<graph::Tensor> params;
  std::vector<Step> steps;
  std::string object_code;  ///< kCpu
  /// kCuda: every kernel (entry = the steps' symbol; launch shape; its own source), the CUDA C
  /// module they form, and NVRTC's PTX of it where NVRTC was present at compile time (else the
  /// loader compiles the module).
  std::vector<codegen::cuda::CudaKernelSource> gpu_kernels;
  std::string gpu_source;
  std::string gpu_ptx;
};

/// "cuda -arch=sm_80" or "llvm -mcpu=<cpu>": what `inspect`, `run` and errors print.
std::string describe_target(const CompiledNetwork& network);

/// "kernel" / "native" / "interpret".
const char* step_kind_name(Step::Kind kind);

}  // namespace tensortune::runtime
