#pragma once
/// \file
/// Simulated annealing over a config space guided by a cost model (AutoTVM's SA optimizer):
/// `chains` points walk the space in parallel; each step proposes a random walk for every
/// chain, scores the proposals in one batch, and accepts a worse proposal with probability
/// exp((new - old) / T), T falling linearly from temp_start to temp_end. The best points seen
/// (distinct, valid, not excluded) are kept in a heap; the search stops after `iterations`
/// steps or when the heap has not changed for `early_stop` steps.

#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <vector>

#include "schedule_space/config_space.h"

namespace tensortune::tuner {

struct SaOptions {
  int chains = 128;
  int iterations = 500;
  int early_stop = 50;
  double temp_start = 1.0;
  double temp_end = 0.0;
};

/// Higher is better; one score per index.
using BatchScorer = std::function<std::vector<float>(const std::vector<int64_t>& indices)>;

struct ScoredIndex {
  int64_t index;
  float score;
};

/// Up to `count` distinct valid indices not in `exclude`, best first.
std::vector<ScoredIndex> simulated_annealing(const schedule_space::ConfigSpace& space,
                                             const BatchScorer& score, size_t count,
                                             const std::set<int64_t>& exclude,
                                             const SaOptions& options, std::mt19937_64& rng);

}  // namespace tensortune::tuner
