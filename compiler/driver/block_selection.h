#pragma once
/// \file
/// Choosing each blocked conv2d workload's record with the layers around it in mind: the fastest
/// record of every workload alone leaves neighbouring layers with different blocks, and every
/// mismatch costs a layout transform (and, on a residual add, the add's fusion). A small
/// stand-in for AutoTVM's graph tuner: candidates are each workload's fastest record per block
/// pair; the cost of an assignment is the records' kernel times plus, for every mismatched
/// edge, the transform's estimated time (the tensor's bytes at kTransformBytesPerSecond);
/// coordinate descent from the fastest records until no single change helps.
#include <map>
#include <string>

#include "compiler/driver/tuned_configs.h"
#include "compiler/graph/graph.h"
#include "support/error.h"

namespace tensortune::driver {

/// Measured on this kind of machine: a 0.8 MB activation re-blocked in about 0.13 ms.
inline constexpr double kTransformBytesPerSecond = 6e9;

struct BlockSelection {
  /// By described workload (schedule_space::describe_workload); workloads without records are
  /// absent.
  std::map<std::string, schedule_space::TemplateConfig> chosen;
  double fastest_cost_s = 0;  ///< estimated network cost with every workload's fastest record
  double chosen_cost_s = 0;   ///< ... with the chosen ones
  int changed = 0;            ///< workloads that do not take their fastest record
};

/// The graph whose convolutions the CPU pipeline will block: quantized ones rewritten into
/// integers where a template of `target` serves them (FakeQuantizationToInteger, when
/// `integer_kernels`), every constant subgraph folded (a QDQ model's weights are dequantized at
/// run time until then). The layout-aware block choice and the graph tuner decide on it, so that
/// they see the workloads (float or int8) and node names that compile runs.
Expected<graph::Graph> convolutions_as_compiled(const graph::Graph& model,
                                                const schedule_space::Target& target,
                                                bool integer_kernels,
                                                const schedule_space::AlgorithmFilter& algorithms);

/// `model` is the graph before AlterOpLayout (NCHW convolutions).
/// Candidates come from the templates of the blocked layout that `algorithms` allows.
BlockSelection select_blocks(const graph::Graph& model, const driver::TunedConfigs& tuned,
                             const schedule_space::Target& target,
                             const schedule_space::AlgorithmFilter& algorithms = {});

}  // namespace tensortune::driver
