#pragma once
/// \file
/// A tuning task: template + workload + target, its canonical workload key, and shortcuts to
/// its template's entry points (config space, default config, FLOP count).

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/cpu_model.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"
#include "support/error.h"

namespace tensortune::schedule_space {

/// The names of the registered templates (template_registry.cc), for call sites that pick one.
inline constexpr char kConv2dNCHWc[] = "conv2d_NCHWc.x86";
inline constexpr char kConv2dNCHWcWinograd[] = "conv2d_NCHWc_winograd.x86";
inline constexpr char kDensePack[] = "dense_pack.x86";
inline constexpr char kDenseNopack[] = "dense_nopack.x86";
inline constexpr char kDepthwiseConv2dNCHWc[] = "depthwise_conv2d_NCHWc.x86";
inline constexpr char kConv2dNCHWcInt8[] = "conv2d_NCHWc_int8.x86";
inline constexpr char kDenseInt8[] = "dense_int8.x86";
inline constexpr char kBatchMatmulX86[] = "batch_matmul.x86";
inline constexpr char kAttentionX86[] = "attention.x86";
inline constexpr char kAttentionCuda[] = "attention.cuda";
inline constexpr char kBatchMatmulCuda[] = "batch_matmul.cuda";
inline constexpr char kConv2dNchwCuda[] = "conv2d_nchw.cuda";
inline constexpr char kConv2dNchwcCuda[] = "conv2d_NCHWc.cuda";
inline constexpr char kDenseSmallBatchGpu[] = "dense_small_batch.gpu";
inline constexpr char kDenseLargeBatchGpu[] = "dense_large_batch.gpu";

/// The code generation target. `spec` is AutoTVM's target string ("llvm -keys=cpu
/// -mcpu=icelake-server"); `vector_lanes` is the number of float32 lanes of the widest vector
/// register (16 for AVX-512, 8 for AVX2, 4 for SSE/NEON).
struct Target {
  Target() = default;
  Target(std::string spec, int vector_lanes, std::optional<CpuModel> measured_cpu = std::nullopt)
      : spec(std::move(spec)), vector_lanes(vector_lanes), measured_cpu(std::move(measured_cpu)) {}

  std::string spec = "llvm -keys=cpu";
  int vector_lanes = 16;
  /// The CPU's kernel model as measured on it (codegen::host_target fills it for the host);
  /// absent for a target known only by its spec, whose model is the table's (cpu_model_of).
  std::optional<CpuModel> measured_cpu;
  /// The same target whatever is known of its CPU: spec and lanes.
  friend bool operator==(const Target& a, const Target& b) {
    return a.spec == b.spec && a.vector_lanes == b.vector_lanes;
  }
};

/// The kernel model of an llvm target's CPU: the measured one where the target has it, else the
/// table's for the spec's -mcpu (cpu_model_for).
CpuModel cpu_model_of(const Target& target);

/// The backend a target's code comes from: "cuda" for CUDA targets, else "llvm" (the first
/// word of the spec, as AutoTVM's target kinds).
std::string target_backend(const Target& target);

struct Task {
  std::string template_name;
  Workload workload;
  Target target;
};

/// A point of one template's space for one task: what a record decodes into, and what a
/// network node runs (the compiler's kernels are built from these).
struct TemplateConfig {
  Task task;
  ConfigSpace space;
  Config config;
  const Template& tmpl() const;
  KernelSignature signature() const;
  /// "conv2d_NCHWc.x86 [tile_ic=[-1, 8] ...]": for tables and warnings.
  std::string describe() const;
};

/// The registered templates' names, in registry order.
std::vector<std::string> template_names();

/// Validates the workload and that the template exists and computes its operator (conv2d
/// templates take a Conv2dWorkload, dense templates a DenseWorkload) and accepts the workload
/// (Template::accepts).
Expected<Task> make_task(std::string template_name, Workload workload, Target target);

/// The task's template. The task must come from make_task (its template exists).
const Template& template_of(const Task& task);

/// Canonical, stable key: AutoTVM's workload tuple as compact JSON,
/// ["conv2d_NCHWc.x86", [["TENSOR", [1, 64, 56, 56], "float32"], ...]].
std::string workload_key(const Task& task);

/// "conv2d 1x64x56x56 k64x3x3 s1,1 p1,1,1,1 d1,1" for tables (" g32" after it when grouped).
std::string describe_workload(const Workload& w);

Expected<ConfigSpace> make_config_space(const Task& task);

/// Whether some config of the template's space for `w` on `target` is valid: a workload the
/// template accepts may still fit none of the target's register tiles (attention's values
/// wider than any output tile).
bool has_valid_config(const Template& t, const Workload& w, const Target& target);

/// AutoTVM's fallback config for the template (used when no record exists).
Config default_config(const Task& task, const ConfigSpace& space);

double task_flop(const Task& task);

/// The layout blocks (KernelSignature's ic_block and oc_block) that a network node of workload
/// `w` takes on `target` when no record speaks for it: the default config of the first template
/// that runs it in the blocked layout (templates_for's order, the direct algorithm first), as
/// AutoTVM falls back. Nothing when no template of the target's backend runs it blocked.
std::optional<std::pair<int64_t, int64_t>> fallback_blocks(const Workload& w, const Target& target);

}  // namespace tensortune::schedule_space
