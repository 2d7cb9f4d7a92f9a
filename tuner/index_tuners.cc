#include "tuner/index_tuners.h"

namespace tensortune::tuner {

namespace ss = schedule_space;

VisitedSet::VisitedSet(const ss::ConfigSpace& space)
    : space_(space), offered_count_(space.offered_count()) {}

void VisitedSet::mark(int64_t index) {
  if (visited_.insert(index).second && space_.is_offered_index(index)) ++visited_offered_;
}

std::vector<ss::Config> GridTuner::next_batch(int n) {
  std::vector<ss::Config> out;
  const ss::ConfigSpace& space = visited_.space();
  while (static_cast<int>(out.size()) < n && cursor_ < space.size()) {
    const int64_t i = cursor_++;
    if (visited_.visited(i)) continue;
    auto c = space.config_at(i);
    if (!space.is_offered(*c)) continue;
    visited_.mark(i);
    out.push_back(*c);
  }
  return out;
}

void GridTuner::skip(const std::set<int64_t>& indices) {
  for (int64_t i : indices) visited_.mark(i);
}

std::vector<ss::Config> RandomTuner::next_batch(int n) {
  std::vector<ss::Config> out;
  const ss::ConfigSpace& space = visited_.space();
  std::uniform_int_distribution<int64_t> pick(0, space.size() - 1);
  while (static_cast<int>(out.size()) < n && visited_.remaining() > 0) {
    // Rejection sampling is fast while most of the space is unvisited; near the end a scan
    // from a random start finds the few that are left.
    int64_t found = -1;
    for (int attempt = 0; attempt < 64 && found < 0; ++attempt) {
      const int64_t i = pick(rng_);
      if (!visited_.visited(i) && space.is_offered_index(i)) found = i;
    }
    if (found < 0) {
      const int64_t start = pick(rng_);
      for (int64_t k = 0; k < space.size() && found < 0; ++k) {
        const int64_t i = (start + k) % space.size();
        if (!visited_.visited(i) && space.is_offered_index(i)) found = i;
      }
    }
    if (found < 0) break;
    visited_.mark(found);
    out.push_back(*space.config_at(found));
  }
  return out;
}

void RandomTuner::skip(const std::set<int64_t>& indices) {
  for (int64_t i : indices) visited_.mark(i);
}

ListTuner::ListTuner(const ss::ConfigSpace& space, std::vector<int64_t> indices) : visited_(space) {
  for (int64_t i : indices)
    if (space.is_valid_index(i)) indices_.push_back(i);
}

std::vector<ss::Config> ListTuner::next_batch(int n) {
  std::vector<ss::Config> out;
  while (static_cast<int>(out.size()) < n && cursor_ < indices_.size()) {
    const int64_t i = indices_[cursor_++];
    if (visited_.visited(i)) continue;
    visited_.mark(i);
    out.push_back(*visited_.space().config_at(i));
  }
  return out;
}

bool ListTuner::has_next() const {
  for (size_t k = cursor_; k < indices_.size(); ++k)
    if (!visited_.visited(indices_[k])) return true;
  return false;
}

void ListTuner::skip(const std::set<int64_t>& indices) {
  for (int64_t i : indices) visited_.mark(i);
}

}  // namespace tensortune::tuner
