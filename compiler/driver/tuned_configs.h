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

  /// The task's config: the best record's when it is valid in `space` (one whose register tile
  /// exceeds our budget, as AutoTVM's may, keeps its blocks with a smaller tile), else one
  /// borrowed from the nearest tuned workload of the same template (recorded in borrowed()),
  /// else the default config (recorded in fallbacks()); warned about once per workload.
  struct ChosenConfig {
    schedule_space::Config config;
    bool tuned = false;
    std::string borrowed_from;  ///< the described workload it came from; empty if none
  };
  ChosenConfig config(const schedule_space::Task& task, const schedule_space::ConfigSpace& space);

  /// A record of the workload, decoded, with its mean cost in seconds.
  struct Candidate {
    schedule_space::TemplateConfig kernel;
    double seconds = 0;
    int64_t ic_block = 1, oc_block = 1;  ///< its kernel's layout blocks (signature)
    std::string entity_json;             ///< the record's config
    std::string workload_key;            ///< the record's task
  };
  /// The workload's records of each of `templates` (its 20 fastest per template), fastest
  /// first; empty without records.
  std::vector<Candidate> candidates(const schedule_space::Workload& workload,
                                    const std::vector<const schedule_space::Template*>& templates,
                                    const schedule_space::Target& target) const;
  /// The fastest of those per distinct (ic_block, oc_block), fastest first: what a layout-aware
  /// choice between layers (driver/block_selection.h, the graph tuner) picks from.
  std::vector<Candidate> candidates_by_blocks(
      const schedule_space::Workload& workload,
      const std::vector<const schedule_space::Template*>& templates,
      const schedule_space::Target& target) const;

  size_t size() const { return best_.size(); }
  const std::string& source() const { return source_; }
  /// Workloads that took the default config, described ("conv2d 1x64x56x56 k64x3x3 ...").
  const std::vector<std::string>& fallbacks() const { return fallbacks_; }
  /// Workloads that borrowed a config: described workload -> the tuned one it came from.
  const std::map<std::string, std::string>& borrowed() const { return borrowed_; }

 private:
  struct Reference {
    schedule_space::Workload workload;
    schedule_space::ConfigSpace space;
    schedule_space::Config config;
  };
  /// The nearest tuned workload's config of the same template, carried into `space`.
  std::optional<schedule_space::Config> borrow_for(const schedule_space::Task& task,
                                                   const schedule_space::ConfigSpace& space);

  bool borrow_ = true;
  /// The tuned workloads of each template, built on first use.
  std::map<std::string, std::vector<Reference>> references_;
  std::map<std::string, std::string> borrowed_;
  std::string source_ = "no records (none were given)";
  std::map<std::string, std::string> best_;  // workload key -> entity JSON
  /// Every error-free record per workload key: entity JSON and mean cost in seconds.
  std::map<std::string, std::vector<std::pair<std::string, double>>> all_;
  std::set<std::string> warned_;
  std::vector<std::string> fallbacks_;
};

}  // namespace tensortune::driver
