#include "tuner/space_walk.h"

namespace tensortune::tuner {

namespace ss = schedule_space;

std::optional<int64_t> random_offered_index(const ss::ConfigSpace& space, std::mt19937_64& rng,
                                            const std::function<bool(int64_t)>& wanted,
                                            int attempts) {
  std::uniform_int_distribution<int64_t> pick(0, space.size() - 1);
  for (int a = 0; a < attempts; ++a) {
    const int64_t i = pick(rng);
    if (space.is_offered_index(i) && wanted(i)) return i;
  }
  const int64_t start = pick(rng);
  for (int64_t k = 0; k < space.size(); ++k) {
    const int64_t i = (start + k) % space.size();
    if (space.is_offered_index(i) && wanted(i)) return i;
  }
  return std::nullopt;
}

std::optional<int64_t> random_walk(const ss::ConfigSpace& space, int64_t index,
                                   std::mt19937_64& rng) {
  auto config = space.config_at(index);
  if (!config) return std::nullopt;
  const auto& knobs = space.knobs();
  std::uniform_int_distribution<size_t> which(0, knobs.size() - 1);
  for (int attempt = 0; attempt < 20; ++attempt) {
    const size_t k = which(rng);
    const int32_t dim = static_cast<int32_t>(knobs[k].options.size());
    if (dim < 2) continue;
    std::vector<int32_t> digits = config->digits;
    std::uniform_int_distribution<int32_t> value(0, dim - 2);
    int32_t v = value(rng);
    if (v >= digits[k]) ++v;  // any candidate but the current one
    digits[k] = v;
    auto next = space.config_from_digits(digits);
    if (next && space.is_offered(*next)) return next->index;
  }
  return std::nullopt;
}

}  // namespace tensortune::tuner
