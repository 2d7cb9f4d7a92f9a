// Grid and random tuners: every valid config exactly once, never an invalid one, same seed
// same sequence, skipped configs never proposed.
#include "tuner/index_tuners.h"

#include <gtest/gtest.h>

#include <set>

#include "schedule_space/task.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

ss::ConfigSpace space() {
  return *ss::make_config_space(
      *ss::make_task(ss::kConv2dNCHWc, ss::square_conv2d(16, 14, 64, 3, 1), {"llvm", 16}));
}

int64_t valid_count(const ss::ConfigSpace& s) {
  int64_t n = 0;
  for (int64_t i = 0; i < s.size(); ++i) n += s.is_valid_index(i);
  return n;
}

std::vector<int64_t> drain(tt::tuner::Tuner& t, int batch) {
  std::vector<int64_t> out;
  while (t.has_next()) {
    auto b = t.next_batch(batch);
    if (b.empty()) break;
    for (const auto& c : b) out.push_back(c.index);
  }
  return out;
}

TEST(GridTuner, VisitsEveryValidConfigOnceInOrder) {
  auto s = space();
  tt::tuner::GridTuner g(s);
  auto seq = drain(g, 7);
  EXPECT_EQ(static_cast<int64_t>(seq.size()), valid_count(s));
  EXPECT_TRUE(std::is_sorted(seq.begin(), seq.end()));
  for (int64_t i : seq) EXPECT_TRUE(s.is_valid_index(i));
}

TEST(RandomTuner, NeverRepeatsAndCoversTheValidSpace) {
  auto s = space();
  tt::tuner::RandomTuner r(s, 42);
  auto seq = drain(r, 16);
  std::set<int64_t> unique(seq.begin(), seq.end());
  EXPECT_EQ(unique.size(), seq.size());
  EXPECT_EQ(static_cast<int64_t>(seq.size()), valid_count(s));
  for (int64_t i : seq) EXPECT_TRUE(s.is_valid_index(i));
  EXPECT_FALSE(std::is_sorted(seq.begin(), seq.end()));
}

TEST(RandomTuner, SameSeedSameSequence) {
  auto s = space();
  tt::tuner::RandomTuner a(s, 7), b(s, 7), c(s, 8);
  auto sa = a.next_batch(50), sb = b.next_batch(50), sc = c.next_batch(50);
  std::vector<int64_t> ia, ib, ic;
  for (auto& x : sa) ia.push_back(x.index);
  for (auto& x : sb) ib.push_back(x.index);
  for (auto& x : sc) ic.push_back(x.index);
  EXPECT_EQ(ia, ib);
  EXPECT_NE(ia, ic);
}

TEST(Tuners, SkippedConfigsAreNeverProposed) {
  auto s = space();
  std::set<int64_t> skip;
  for (int64_t i = 0; i < s.size(); i += 3)
    if (s.is_valid_index(i)) skip.insert(i);
  tt::tuner::RandomTuner r(s, 1);
  r.skip(skip);
  tt::tuner::GridTuner g(s);
  g.skip(skip);
  for (auto* t : std::vector<tt::tuner::Tuner*>{&r, &g}) {
    auto seq = drain(*t, 9);
    EXPECT_EQ(static_cast<int64_t>(seq.size()), valid_count(s) - static_cast<int64_t>(skip.size()));
    for (int64_t i : seq) EXPECT_EQ(skip.count(i), 0u) << t->name();
  }
}

}  // namespace

namespace {

// The list tuner proposes exactly the valid configs it was given, in their order, once each,
// less those skipped (resuming); invalid and repeated indices are never proposed.
TEST(ListTuner, ProposesTheGivenValidConfigsInOrderLessTheSkippedOnes) {
  auto s = space();
  std::vector<int64_t> valid, invalid;
  for (int64_t i = 0; i < s.size() && (valid.size() < 6 || invalid.empty()); ++i)
    (s.is_valid_index(i) ? valid : invalid).push_back(i);
  ASSERT_GE(valid.size(), 6u);
  ASSERT_FALSE(invalid.empty());
  const std::vector<int64_t> given = {valid[4], invalid[0], valid[1], valid[5],
                                      valid[1], valid[0],   valid[3]};
  tt::tuner::ListTuner t(s, given);
  t.skip({valid[5], valid[2]});
  EXPECT_EQ(drain(t, 2), (std::vector<int64_t>{valid[4], valid[1], valid[0], valid[3]}));
  EXPECT_FALSE(t.has_next());
  EXPECT_TRUE(t.next_batch(4).empty());
}

}  // namespace
