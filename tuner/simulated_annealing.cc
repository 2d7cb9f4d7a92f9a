#include "tuner/simulated_annealing.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tuner/space_walk.h"

namespace tensortune::tuner {

namespace ss = schedule_space;

std::vector<ScoredIndex> simulated_annealing(const ss::ConfigSpace& space, const BatchScorer& score,
                                             size_t count, const std::set<int64_t>& exclude,
                                             const SaOptions& o, std::mt19937_64& rng) {
  std::vector<int64_t> points;
  for (int c = 0; c < o.chains; ++c) {
    auto i = random_offered_index(space, rng, [](int64_t) { return true; });
    if (!i) break;
    points.push_back(*i);
  }
  if (points.empty() || count == 0) return {};
  std::vector<float> scores = score(points);

  // The best `count` points seen, keyed by index so that each appears once.
  std::map<int64_t, float> best;
  float floor = -INFINITY;
  auto offer = [&](int64_t index, float s) -> bool {
    if (exclude.count(index) || best.count(index)) return false;
    if (best.size() >= count && s <= floor) return false;
    best.emplace(index, s);
    if (best.size() > count) {
      auto worst = std::min_element(best.begin(), best.end(),
                                    [](auto& a, auto& b) { return a.second < b.second; });
      best.erase(worst);
    }
    floor = std::min_element(best.begin(), best.end(), [](auto& a, auto& b) {
              return a.second < b.second;
            })->second;
    return true;
  };
  for (size_t i = 0; i < points.size(); ++i) offer(points[i], scores[i]);

  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int unchanged = 0;
  for (int step = 0; step < o.iterations && unchanged < o.early_stop; ++step) {
    const double t = o.temp_start + (o.temp_end - o.temp_start) * step / std::max(1, o.iterations);
    std::vector<int64_t> proposals(points.size());
    for (size_t i = 0; i < points.size(); ++i)
      proposals[i] = random_walk(space, points[i], rng).value_or(points[i]);
    std::vector<float> proposed = score(proposals);
    bool changed = false;
    for (size_t i = 0; i < points.size(); ++i) {
      changed |= offer(proposals[i], proposed[i]);
      const double delta = static_cast<double>(proposed[i]) - scores[i];
      if (delta >= 0 || (t > 1e-9 && unit(rng) < std::exp(delta / t))) {
        points[i] = proposals[i];
        scores[i] = proposed[i];
      }
    }
    unchanged = changed ? 0 : unchanged + 1;
  }
  std::vector<ScoredIndex> out;
  for (const auto& [index, s] : best) out.push_back({index, s});
  std::sort(out.begin(), out.end(), [](const ScoredIndex& a, const ScoredIndex& b) {
    return a.score != b.score ? a.score > b.score : a.index < b.index;
  });
  return out;
}

}  // namespace tensortune::tuner
