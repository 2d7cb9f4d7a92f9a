#pragma once
/// \file
/// Tuners that walk the index space without a model: grid (ascending offered indices), random
/// (uniform over offered unvisited indices, never repeating, seedable) and a given list (any
/// valid index in it: the caller chose them).

#include <memory>
#include <random>

#include "tuner/tuner.h"

namespace tensortune::tuner {

/// Shared bookkeeping: which indices the space offers (ConfigSpace::is_offered) and which were
/// visited.
class VisitedSet {
 public:
  explicit VisitedSet(const schedule_space::ConfigSpace& space);
  bool visited(int64_t index) const { return visited_.count(index) > 0; }
  void mark(int64_t index);
  /// Offered indices not visited yet.
  int64_t remaining() const { return offered_count_ - visited_offered_; }
  const schedule_space::ConfigSpace& space() const { return space_; }

 private:
  const schedule_space::ConfigSpace& space_;
  std::set<int64_t> visited_;
  int64_t offered_count_ = 0;
  int64_t visited_offered_ = 0;
};

class GridTuner final : public Tuner {
 public:
  explicit GridTuner(const schedule_space::ConfigSpace& space) : visited_(space) {}
  std::string name() const override { return "grid"; }
  std::vector<schedule_space::Config> next_batch(int n) override;
  void update(const std::vector<schedule_space::Config>&,
              const std::vector<schedule_space::MeasureResult>&) override {}
  bool has_next() const override { return visited_.remaining() > 0; }
  void skip(const std::set<int64_t>& indices) override;

 private:
  VisitedSet visited_;
  int64_t cursor_ = 0;
};

class RandomTuner final : public Tuner {
 public:
  RandomTuner(const schedule_space::ConfigSpace& space, uint64_t seed)
      : visited_(space), rng_(seed) {}
  std::string name() const override { return "random"; }
  std::vector<schedule_space::Config> next_batch(int n) override;
  void update(const std::vector<schedule_space::Config>&,
              const std::vector<schedule_space::MeasureResult>&) override {}
  bool has_next() const override { return visited_.remaining() > 0; }
  void skip(const std::set<int64_t>& indices) override;

 private:
  VisitedSet visited_;
  std::mt19937_64 rng_;
};

/// The given configs, in their order, less those visited (invalid ones are dropped): measuring
/// exactly the configs a caller chose, e.g. those of the blocks a network imposes on a layer.
class ListTuner final : public Tuner {
 public:
  ListTuner(const schedule_space::ConfigSpace& space, std::vector<int64_t> indices);
  std::string name() const override { return "list"; }
  std::vector<schedule_space::Config> next_batch(int n) override;
  void update(const std::vector<schedule_space::Config>&,
              const std::vector<schedule_space::MeasureResult>&) override {}
  bool has_next() const override;
  void skip(const std::set<int64_t>& indices) override;

 private:
  VisitedSet visited_;
  std::vector<int64_t> indices_;
  size_t cursor_ = 0;
};

}  // namespace tensortune::tuner
