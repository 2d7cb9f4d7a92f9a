#pragma once
/// \file
/// Applying the records: the best tuned config per workload, read from a record DB or an
/// AutoTVM log, as the compiler consumes it. A workload with no record gets the template's
/// default config and one warning naming it, as AutoTVM falls back; never silence.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/conv2d_winograd_template.h"
#include "schedule_space/task.h"
#include "support/error.h"

namespace tensortune::driver {

class TunedConfigs {
 public:
  /// No records: every workload takes its default config (with the warning).
  TunedConfigs() = default;

  /// `path` is a tensortune record DB or an AutoTVM JSON-lines log (told apart by content).
  /// Only records measured on `device_key` count, unless it is empty (a log's records all
  /// count; its records of templates tensortune lacks are skipped with one warning per
  /// template). `borrow`: untuned workloads borrow from the nearest tuned one (AutoTVM's
  /// fallback_with_reference_log); false: they take the default config. Fails naming the file.
  ///
  /// `threads` (0: any): records are kept per thread count, and a network compiled to run on
  /// N threads should take the configs tuned for N (the parallel splits differ). Each workload
  /// takes its records of that count where it has some, else those of any count (warned once).
  static Expected<TunedConfigs> load(const std::string& path, const std::string& device_key,
                                     int vector_lanes, bool borrow = true, int threads = 0);

  /// Whether records of the Winograd template compete with the direct template's for 3x3
  /// stride-1 workloads (default: yes). false: every conv2d node runs the direct template.
  void set_winograd(bool enabled) { winograd_ = enabled; }

  /// The conv2d_NCHWc schedule for the workload on the target: the Winograd template's best
  /// record where it measured faster than the direct template's best (or the direct one has
  /// none), else the direct best record's, else one borrowed from the nearest tuned workload
  /// (recorded in borrowed()), else the default config (recorded in fallbacks()); warned about
  /// once per workload.
  schedule_space::Conv2dSchedule conv2d_schedule(const schedule_space::Conv2dWorkload& workload,
                                                 const schedule_space::Target& target);

  /// Any template's config for the task: the best record's when it is valid in `space`, else
  /// the default config with one warning per workload (recorded in fallbacks()). `tuned` says
  /// which. No borrowing: what transfers between workloads is the CPU template's blocks.
  struct ChosenConfig {
    schedule_space::Config config;
    bool tuned = false;
  };
  ChosenConfig config(const schedule_space::Task& task, const schedule_space::ConfigSpace& space);

  /// The fastest record of each distinct (ic_bn, oc_bn) pair for the workload, with its mean
  /// cost in seconds, fastest first; empty without records. Direct and Winograd records compete
  /// (a Winograd candidate's schedule has `winograd` set). What a layout-aware choice between
  /// layers (driver/block_selection.h) picks from.
  struct Candidate {
    schedule_space::Conv2dSchedule schedule;
    double seconds = 0;
    std::string entity_json;   ///< the record's config
    std::string workload_key;  ///< the record's task
  };
  std::vector<Candidate> candidates(const schedule_space::Conv2dWorkload& workload,
                                    const schedule_space::Target& target) const;

  size_t size() const { return best_.size(); }
  const std::string& source() const { return source_; }
  /// Workloads that took the default config, described ("conv2d 1x64x56x56 k64x3x3 ...").
  const std::vector<std::string>& fallbacks() const { return fallbacks_; }
  /// Workloads that borrowed a config: described workload -> the tuned one it came from.
  const std::map<std::string, std::string>& borrowed() const { return borrowed_; }

 private:
  struct Reference {
    schedule_space::Conv2dWorkload workload;
    schedule_space::ConfigSpace space;
    schedule_space::Config config;
  };
  /// `space` is the workload's config space on `target`.
  std::optional<schedule_space::Conv2dSchedule> borrow_for(
      const schedule_space::Conv2dWorkload& workload, const schedule_space::ConfigSpace& space,
      const schedule_space::Target& target);

  /// The Winograd record that beats every direct record of the workload, if any.
  std::optional<schedule_space::Conv2dSchedule> faster_winograd(
      const schedule_space::Conv2dWorkload& workload, const schedule_space::Target& target) const;
  /// The workload's records of one template, decoded; fastest first.
  std::vector<Candidate> decoded(const schedule_space::Conv2dWorkload& workload,
                                 const schedule_space::Target& target, bool winograd) const;

  bool borrow_ = true;
  bool winograd_ = true;
  std::vector<Reference> references_;  // the tuned conv2d_NCHWc workloads, built on first use
  bool references_built_ = false;
  std::map<std::string, std::string> borrowed_;
  std::string source_ = "no records (none were given)";
  std::map<std::string, std::string> best_;  // workload key -> entity JSON
  /// Every error-free record per workload key: entity JSON and mean cost in seconds.
  std::map<std::string, std::vector<std::pair<std::string, double>>> all_;
  std::set<std::string> warned_;
  std::vector<std::string> fallbacks_;
};

}  // namespace tensortune::driver
