#pragma once
/// \file
/// The tuner interface: a tuner proposes configs, learns from their results and says when it
/// has nothing left to propose. Tuners never propose invalid configs or configs already
/// visited (measured in this run or, after `skip`, in an earlier one).

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"

namespace tensortune::tuner {

class Tuner {
 public:
  virtual ~Tuner() = default;
  virtual std::string name() const = 0;
  /// Up to `n` configs not proposed before; fewer (possibly none) when the space runs out.
  virtual std::vector<schedule_space::Config> next_batch(int n) = 0;
  virtual void update(const std::vector<schedule_space::Config>& configs,
                      const std::vector<schedule_space::MeasureResult>& results) = 0;
  virtual bool has_next() const = 0;
  /// Marks configs as visited without measuring them (resuming from a record DB).
  virtual void skip(const std::set<int64_t>& indices) = 0;
};

}  // namespace tensortune::tuner
