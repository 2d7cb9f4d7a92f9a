#pragma once
/// \file
/// The genetic tuner (AutoTVM's GATuner, without its repeats): genes are knob-digit vectors.
/// Generation 0 is `pop_size` random valid configs. When a generation is measured, the next is
/// bred from it and the elites: parents are drawn with probability proportional to throughput,
/// crossed at a random knob, and each digit mutates with `mutation_prob`. Unlike AutoTVM, a
/// child that is invalid, already measured or already in the generation is mutated again (and
/// after 50 tries replaced by a random unvisited config), so no config is ever measured twice.

#include <map>
#include <memory>
#include <optional>
#include <random>

#include "tuner/index_tuners.h"
#include "tuner/tuner.h"

namespace tensortune::tuner {

struct GaOptions {
  int pop_size = 100;
  int elite_num = 3;
  double mutation_prob = 0.1;
  uint64_t seed = 0;
};

class GaTuner final : public Tuner {
 public:
  static Expected<std::unique_ptr<GaTuner>> create(const schedule_space::ConfigSpace& space,
                                                   GaOptions options);
  std::string name() const override { return "ga"; }
  std::vector<schedule_space::Config> next_batch(int n) override;
  void update(const std::vector<schedule_space::Config>& configs,
              const std::vector<schedule_space::MeasureResult>& results) override;
  bool has_next() const override { return visited_.remaining() > 0; }
  void skip(const std::set<int64_t>& indices) override;
  int generation() const { return generation_; }

 private:
  GaTuner(const schedule_space::ConfigSpace& space, GaOptions options);
  void breed();
  std::optional<int64_t> child(const std::vector<std::pair<std::vector<int32_t>, double>>& parents,
                               const std::vector<double>& cumulative,
                               const std::set<int64_t>& taken);

  const schedule_space::ConfigSpace& space_;
  GaOptions options_;
  VisitedSet visited_;
  std::mt19937_64 rng_;
  std::vector<int64_t> pending_;                 ///< this generation, not yet proposed
  std::map<int64_t, double> generation_scores_;  ///< this generation's measured throughput (1/cost)
  size_t proposed_in_generation_ = 0;
  std::vector<std::pair<std::vector<int32_t>, double>> elites_;
  int generation_ = 0;
};

}  // namespace tensortune::tuner
