#include "tuner/ga_tuner.h"

#include <algorithm>

#include "tuner/space_walk.h"

namespace tensortune::tuner {

namespace ss = schedule_space;

Expected<std::unique_ptr<GaTuner>> GaTuner::create(const ss::ConfigSpace& space,
                                                   GaOptions options) {
  if (options.pop_size < 2)
    return invalid_argument("pop_size = " + std::to_string(options.pop_size) + ", must be >= 2");
  if (options.elite_num < 0 || options.elite_num > options.pop_size)
    return invalid_argument("elite_num = " + std::to_string(options.elite_num) +
                            ", must be in [0, pop_size]");
  if (options.mutation_prob < 0 || options.mutation_prob > 1)
    return invalid_argument("mutation_prob = " + std::to_string(options.mutation_prob) +
                            ", must be in [0, 1]");
  return std::unique_ptr<GaTuner>(new GaTuner(space, options));
}

GaTuner::GaTuner(const ss::ConfigSpace& space, GaOptions options)
    : space_(space), options_(options), visited_(space), rng_(options.seed) {}

void GaTuner::skip(const std::set<int64_t>& indices) {
  for (int64_t i : indices) visited_.mark(i);
}

std::vector<ss::Config> GaTuner::next_batch(int n) {
  std::vector<ss::Config> out;
  while (static_cast<int>(out.size()) < n && visited_.remaining() > 0) {
    if (pending_.empty()) {
      // Breed only once the whole generation is measured; before that, hand out nothing more.
      if (proposed_in_generation_ > generation_scores_.size()) break;
      breed();
      if (pending_.empty()) break;
    }
    const int64_t i = pending_.back();
    pending_.pop_back();
    if (visited_.visited(i)) continue;
    visited_.mark(i);
    ++proposed_in_generation_;
    out.push_back(*space_.config_at(i));
  }
  return out;
}

void GaTuner::update(const std::vector<ss::Config>& configs,
                     const std::vector<ss::MeasureResult>& results) {
  for (size_t i = 0; i < configs.size() && i < results.size(); ++i) {
    const auto& r = results[i];
    generation_scores_[configs[i].index] = r.ok() && r.mean_cost() > 0 ? 1.0 / r.mean_cost() : 0.0;
  }
}

std::optional<int64_t> GaTuner::child(
    const std::vector<std::pair<std::vector<int32_t>, double>>& parents,
    const std::vector<double>& cumulative, const std::set<int64_t>& taken) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto draw = [&]() -> size_t {
    const double u = unit(rng_) * cumulative.back();
    return static_cast<size_t>(std::lower_bound(cumulative.begin(), cumulative.end(), u) -
                               cumulative.begin());
  };
  const auto& knobs = space_.knobs();
  for (int attempt = 0; attempt < 50; ++attempt) {
    const size_t a = std::min(draw(), parents.size() - 1);
    size_t b = std::min(draw(), parents.size() - 1);
    if (parents.size() > 1)
      for (int k = 0; k < 8 && b == a; ++k) b = std::min(draw(), parents.size() - 1);
    std::uniform_int_distribution<size_t> cut(0, knobs.size());
    const size_t point = cut(rng_);
    std::vector<int32_t> genes = parents[a].first;
    for (size_t k = point; k < knobs.size(); ++k) genes[k] = parents[b].first[k];
    // Mutate; after repeated collisions mutate harder so that the child leaves the visited set.
    const double p = std::min(1.0, options_.mutation_prob * (1 + attempt / 5));
    for (size_t k = 0; k < knobs.size(); ++k) {
      if (unit(rng_) < p) {
        std::uniform_int_distribution<int32_t> v(0,
                                                 static_cast<int32_t>(knobs[k].options.size()) - 1);
        genes[k] = v(rng_);
      }
    }
    auto c = space_.config_from_digits(genes);
    if (c && space_.is_offered(*c) && !visited_.visited(c->index) && !taken.count(c->index))
      return c->index;
  }
  return random_offered_index(space_, rng_,
                              [&](int64_t i) { return !visited_.visited(i) && !taken.count(i); });
}

void GaTuner::breed() {
  const size_t pop = static_cast<size_t>(options_.pop_size);
  std::set<int64_t> taken;
  std::vector<int64_t> next;
  if (generation_scores_.empty() && elites_.empty()) {
    while (next.size() < pop) {
      auto i = random_offered_index(
          space_, rng_, [&](int64_t x) { return !visited_.visited(x) && !taken.count(x); });
      if (!i) break;
      taken.insert(*i);
      next.push_back(*i);
    }
  } else {
    std::vector<std::pair<std::vector<int32_t>, double>> parents = elites_;
    for (const auto& [index, score] : generation_scores_)
      parents.emplace_back(space_.config_at(index)->digits, score);
    std::stable_sort(parents.begin(), parents.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    elites_.assign(parents.begin(),
                   parents.begin() + std::min<size_t>(parents.size(), options_.elite_num));
    const double best = parents.empty() ? 0 : parents.front().second;
    std::vector<double> cumulative;
    double acc = 0;
    for (const auto& p : parents) {
      acc += (best > 0 ? p.second / best : 0.0) + 1e-8;
      cumulative.push_back(acc);
    }
    while (next.size() < pop) {
      auto c = child(parents, cumulative, taken);
      if (!c) break;
      taken.insert(*c);
      next.push_back(*c);
    }
  }
  std::reverse(next.begin(), next.end());  // pending_ is consumed from the back
  pending_ = std::move(next);
  generation_scores_.clear();
  proposed_in_generation_ = 0;
  ++generation_;
}

}  // namespace tensortune::tuner
