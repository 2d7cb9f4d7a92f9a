#pragma once
/// \file
/// Which template, with which config, runs each conv2d and dense node of a network: the one
/// function that chooses between the templates that serve a node. The choice, in order: the
/// caller's (tests), the node's graph-best record (tensortune graph-tune), the workload's
/// layout-aware record (block_selection.h), the fastest record across the templates that serve
/// it, else the config of the first template task extraction tunes for it (borrowed or the
/// fallback, tuned_configs.h). Where the
/// node cannot run that choice (its neighbours fixed other layout blocks, or the template reads
/// its weight transformed at compile time and the weight is computed at run time), the first
/// template that can, with a config for the node's blocks.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/driver/tuned_configs.h"
#include "compiler/runtime/compiled_network.h"
#include "schedule_space/task.h"
#include "schedule_space/template.h"
#include "support/error.h"

namespace tensortune::driver {

/// What the lowering knows of a node when it asks for its kernel.
struct NodeKernelRequest {
  std::string node;
  schedule_space::Workload workload;
  /// NCHW[x]c with these blocks; false: plain NCHW, or a dense.
  bool blocked = false;
  int64_t ic_block = 1, oc_block = 1;
  bool constant_weight = true;
};

/// The templates of `target`'s backend that serve the workload in `layout` (templates_for,
/// filtered by Template::network_layout), in registry order.
std::vector<const schedule_space::Template*> templates_of_layout(
    const schedule_space::Workload& w, const schedule_space::Target& target,
    const schedule_space::AlgorithmFilter& algorithms, schedule_space::NetworkLayout layout);

/// A caller's own choice for a workload (tests pick non-default configs); nothing: choose.
using KernelOverride =
    std::function<std::optional<schedule_space::TemplateConfig>(const schedule_space::Workload&)>;

/// Whether a network runs an attention of workload `w` fused (an attention template's kernel)
/// rather than as its two batch matmuls around a softmax: where records time the fused kernel
/// and both batch matmuls, the faster, the softmax and the mask's add between the matmuls
/// estimated from the scores' bytes they move (no record times them); else `fallback`. false
/// where no template of the target computes `w`.
bool attention_fused(const TunedConfigs& tuned, const schedule_space::AttentionWorkload& w,
                     const schedule_space::Target& target,
                     const schedule_space::AlgorithmFilter& algorithms, bool fallback);

class KernelChooser {
 public:
  KernelChooser(TunedConfigs& tuned, schedule_space::Target target,
                schedule_space::AlgorithmFilter algorithms)
      : tuned_(tuned), target_(std::move(target)), algorithms_(std::move(algorithms)) {}

  void set_override(KernelOverride f) { override_ = std::move(f); }
  /// Layout-aware choices by described workload.
  void set_selection(std::map<std::string, schedule_space::TemplateConfig> chosen) {
    selection_ = std::move(chosen);
  }
  /// Graph-best choices by node name.
  void set_node_choices(std::map<std::string, schedule_space::TemplateConfig> by_node) {
    by_node_ = std::move(by_node);
  }

  /// The workload's kernel before its node's layout is fixed (what AlterOpLayout lays the
  /// network out by), among the templates of `blocked` layout; kNotFound when no template of
  /// the target serves it.
  Expected<schedule_space::TemplateConfig> for_workload(const schedule_space::Workload& w,
                                                        bool blocked);
  /// The (ic, oc) blocks of for_workload(w, true): what AlterOpLayout lays the node out by.
  /// (1, 1) when no template serves it, the error kept for first_error().
  std::pair<int64_t, int64_t> layout_blocks(const schedule_space::Conv2dWorkload& w);
  /// The (ic, oc) blocks of the workload's kernel when records chose it (the caller's choice,
  /// a layout-aware one or the fastest record; not borrowed, not the fallback); nothing
  /// otherwise, or when no template serves it. Depthwise convolutions take these, else keep
  /// their input's block.
  std::optional<std::pair<int64_t, int64_t>> tuned_blocks(const schedule_space::Conv2dWorkload& w);
  /// The first error layout_blocks met; OK when none.
  const Status& first_error() const { return first_error_; }
  /// The node's graph-best kernel, if it has one.
  const schedule_space::TemplateConfig* node_choice(const std::string& node) const;
  /// The kernel the node runs.
  Expected<schedule_space::TemplateConfig> for_node(const NodeKernelRequest& request);

  /// What each workload (and graph-best node) runs, for the artifact's report.
  std::vector<runtime::ScheduleUse> uses() const;

 private:
  std::vector<const schedule_space::Template*> serving(const schedule_space::Workload& w,
                                                       bool blocked) const;

  TunedConfigs& tuned_;
  schedule_space::Target target_;
  schedule_space::AlgorithmFilter algorithms_;
  KernelOverride override_;
  std::map<std::string, schedule_space::TemplateConfig> selection_, by_node_;
  struct Chosen {
    schedule_space::TemplateConfig kernel;
    bool tuned = false;
    std::string borrowed_from;
  };
  Expected<Chosen> choose(const schedule_space::Workload& w, bool blocked);

  std::map<std::string, Chosen> chosen_;  ///< by described workload and layout
  std::map<std::string, runtime::ScheduleUse> uses_;
  Status first_error_;
};

}  // namespace tensortune::driver
