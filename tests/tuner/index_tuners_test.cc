// Grid and random tuners: every offered config (valid, and a register tile the CPU suits)
// exactly once, never another, same seed same sequence, skipped configs never proposed.
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

// A generic AVX-512 CPU (the spec names none): a conv2d_NCHWc register tile (rows x columns x
// vectors of 16 lanes, read off the entity) is offered when its accumulators, its weight
// vectors (where more than one column shares them) and the broadcast input fit in 32 registers
// and it has at least 8 accumulators (two pipes of four cycles), as this workload has tiles
// that large.
bool offered(const ss::ConfigSpace& s, int64_t index) {
  const ss::Config c = *s.config_at(index);
  const auto inner = [&](const char* knob) {
    return std::get<std::vector<int64_t>>(s.value(c, knob)).back();
  };
  const int64_t vectors = (inner("tile_oc") + 15) / 16;
  const int64_t columns = std::get<int64_t>(s.value(c, "tile_oh")) * inner("tile_ow");
  const int64_t acc = columns * vectors;
  return s.is_valid_index(index) && acc >= 8 && acc + (columns > 1 ? vectors : 0) + 1 <= 32;
}

int64_t offered_by_hand(const ss::ConfigSpace& s) {
  int64_t n = 0;
  for (int64_t i = 0; i < s.size(); ++i) n += offered(s, i);
  return n;
}

TEST(Tuners, ProposeOnlyTheTilesTheCpuSuits) {
  auto s = space();
  int64_t valid = 0;
  for (int64_t i = 0; i < s.size(); ++i) valid += s.is_valid_index(i);
  EXPECT_LT(offered_by_hand(s), valid);  // the floor takes some valid configs out
  EXPECT_EQ(s.offered_count(), offered_by_hand(s));
  for (int64_t i = 0; i < s.size(); ++i) EXPECT_EQ(s.is_offered_index(i), offered(s, i)) << i;
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

TEST(GridTuner, VisitsEveryOfferedConfigOnceInOrder) {
  auto s = space();
  tt::tuner::GridTuner g(s);
  auto seq = drain(g, 7);
  EXPECT_EQ(static_cast<int64_t>(seq.size()), offered_by_hand(s));
  EXPECT_TRUE(std::is_sorted(seq.begin(), seq.end()));
  for (int64_t i : seq) EXPECT_TRUE(offered(s, i));
}

TEST(RandomTuner, NeverRepeatsAndCoversTheOfferedSpace) {
  auto s = space();
  tt::tuner::RandomTuner r(s, 42);
  auto seq = drain(r, 16);
  std::set<int64_t> unique(seq.begin(), seq.end());
  EXPECT_EQ(unique.size(), seq.size());
  EXPECT_EQ(static_cast<int64_t>(seq.size()), offered_by_hand(s));
  for (int64_t i : seq) EXPECT_TRUE(offered(s, i));
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
    if (offered(s, i)) skip.insert(i);
  tt::tuner::RandomTuner r(s, 1);
  r.skip(skip);
  tt::tuner::GridTuner g(s);
  g.skip(skip);
  for (auto* t : std::vector<tt::tuner::Tuner*>{&r, &g}) {
    auto seq = drain(*t, 9);
    EXPECT_EQ(static_cast<int64_t>(seq.size()),
              offered_by_hand(s) - static_cast<int64_t>(skip.size()));
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
