// The graph tuner's solvers against brute force on random small problems shaped like networks:
// chains, residual blocks, diamonds and concats, fan-out, and dense graphs where PBQP must fall
// back to its RN heuristic (and says so).
#include <gtest/gtest.h>

#include <random>

#include "tuner/graph_tuner/selection_problem.h"

namespace tensortune::tuner::graph_tuner {
namespace {

/// Random candidates (1 to 4 per node) and costs; transforms cost nothing where the candidates
/// "match" (i == j, as equal blocks do), as real layout transforms are free then.
SelectionProblem random_problem(int nodes, const std::vector<std::pair<int, int>>& edges,
                                std::mt19937& rng) {
  std::uniform_int_distribution<int> count(1, 4);
  std::uniform_real_distribution<double> cost(0.0, 1.0);
  SelectionProblem p;
  for (int n = 0; n < nodes; ++n) {
    p.node_costs.emplace_back(static_cast<size_t>(count(rng)));
    for (double& c : p.node_costs.back()) c = cost(rng);
  }
  for (auto [a, b] : edges) {
    SelectionEdge e{a, b, {}};
    for (size_t i = 0; i < p.node_costs[static_cast<size_t>(a)].size(); ++i) {
      e.cost.emplace_back();
      for (size_t j = 0; j < p.node_costs[static_cast<size_t>(b)].size(); ++j)
        e.cost.back().push_back(i == j ? 0.0 : cost(rng));
    }
    p.edges.push_back(std::move(e));
  }
  return p;
}

std::vector<std::pair<int, int>> chain(int n) {
  std::vector<std::pair<int, int>> e;
  for (int i = 0; i + 1 < n; ++i) e.push_back({i, i + 1});
  return e;
}

/// ResNet's pattern: a chain with a skip edge over every two nodes (the residual add takes both
/// inputs in one layout).
std::vector<std::pair<int, int>> residual(int n) {
  auto e = chain(n);
  for (int i = 0; i + 2 < n; i += 2) e.push_back({i, i + 2});
  return e;
}

/// Inception's pattern: 0 fans out to 1..k, whose outputs are concatenated (one layout: edges
/// between consecutive branches) into k+1.
std::vector<std::pair<int, int>> concat(int k) {
  std::vector<std::pair<int, int>> e;
  for (int b = 1; b <= k; ++b) {
    e.push_back({0, b});
    e.push_back({b, k + 1});
    if (b > 1) e.push_back({b - 1, b});
  }
  return e;
}

std::vector<std::pair<int, int>> complete(int n) {
  std::vector<std::pair<int, int>> e;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) e.push_back({a, b});
  return e;
}

struct Shape {
  const char* name;
  int nodes;
  std::vector<std::pair<int, int>> edges;
  /// R0, RI and RII reduce it completely (series-parallel): PBQP is exact. Otherwise it may need
  /// RN, and must say so when it does.
  bool reducible = true;
};

TEST(GraphTunerSolvers, DpAndPbqpEqualBruteForceOnNetworkShapedGraphs) {
  std::mt19937 rng(2026);
  const std::vector<Shape> shapes = {
      {"chain", 9, chain(9)},
      {"residual", 9, residual(9)},
      {"concat of 2", 4, concat(2)},
      {"concat of 4", 6, concat(4), /*reducible=*/false},
      {"diamond", 4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {1, 2}}},
      {"fan-out", 7, {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {1, 6}, {2, 6}}},
      {"parallel edges", 3, {{0, 1}, {1, 0}, {1, 2}, {0, 2}}},
      {"no edges", 4, {}},
  };
  int pbqp_exact = 0;
  for (const Shape& shape : shapes)
    for (int trial = 0; trial < 40; ++trial) {
      const SelectionProblem p = random_problem(shape.nodes, shape.edges, rng);
      auto want = solve_brute_force(p);
      auto dp = solve_dp(p);
      auto pbqp = solve_pbqp(p);
      ASSERT_TRUE(want && dp && pbqp) << shape.name;
      EXPECT_NEAR(dp->cost, want->cost, 1e-12) << shape.name << " trial " << trial;
      EXPECT_TRUE(dp->exact);
      EXPECT_NEAR(p.cost(dp->choice), dp->cost, 1e-12);
      EXPECT_NEAR(p.cost(pbqp->choice), pbqp->cost, 1e-12);
      if (shape.reducible) {
        EXPECT_TRUE(pbqp->exact) << shape.name << ": " << pbqp->method;
        pbqp_exact += pbqp->exact;
      } else {
        EXPECT_EQ(pbqp->exact, pbqp->method == "pbqp") << pbqp->method;
      }
      if (pbqp->exact) {
        EXPECT_NEAR(pbqp->cost, want->cost, 1e-12) << shape.name << " trial " << trial;
      }
      EXPECT_GE(pbqp->cost, want->cost - 1e-12);
    }
  EXPECT_EQ(pbqp_exact, 7 * 40);
}

// K5: every node has degree 4, so PBQP needs RN, and again on the K4 left (degree 3), then RII
// finishes; it says so, and is never better than the optimum. DP stays exact.
TEST(GraphTunerSolvers, PbqpReportsItsHeuristicOnDenseGraphs) {
  std::mt19937 rng(7);
  int worse = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const SelectionProblem p = random_problem(5, complete(5), rng);
    auto want = solve_brute_force(p);
    auto dp = solve_dp(p);
    auto pbqp = solve_pbqp(p);
    ASSERT_TRUE(want && dp && pbqp);
    EXPECT_NEAR(dp->cost, want->cost, 1e-12);
    EXPECT_FALSE(pbqp->exact);
    EXPECT_NE(pbqp->method.find("RN heuristic at 2 nodes"), std::string::npos) << pbqp->method;
    EXPECT_GE(pbqp->cost, want->cost - 1e-12);
    worse += pbqp->cost > want->cost + 1e-12;
  }
  std::printf("PBQP with RN on K5: optimal in %d of 60 random problems\n", 60 - worse);
}

// A long residual network overflows a tiny DP state limit; solve_selection then uses PBQP, which
// is exact on it, and both agree where DP fits.
TEST(GraphTunerSolvers, SolveFallsBackToPbqpWhenTheDpStateIsTooLarge) {
  std::mt19937 rng(3);
  const SelectionProblem p = random_problem(40, residual(40), rng);
  auto tight = solve_dp(p, 8);
  ASSERT_FALSE(tight);
  EXPECT_EQ(tight.error().code, ErrorCode::kOutOfRange);
  EXPECT_NE(tight.error().message.find("limit 8"), std::string::npos) << tight.error().message;
  auto chosen = solve_selection(p, 8);
  ASSERT_TRUE(chosen) << chosen.error().message;
  EXPECT_EQ(chosen->method, "pbqp");
  auto dp = solve_selection(p);
  ASSERT_TRUE(dp);
  EXPECT_EQ(dp->method, "dp");
  EXPECT_NEAR(dp->cost, chosen->cost, 1e-9);
}

TEST(GraphTunerSolvers, MalformedProblemsAreRefusedNamingThePart) {
  SelectionProblem p;
  p.node_costs = {{1.0, 2.0}, {1.0}};
  p.edges = {{0, 1, {{0.0}, {0.0}}}};
  EXPECT_TRUE(p.validate());
  p.edges[0].cost = {{0.0}};
  auto bad_rows = solve_dp(p);
  ASSERT_FALSE(bad_rows);
  EXPECT_NE(bad_rows.error().message.find("edge 0 (0 -> 1) has 1 rows"), std::string::npos)
      << bad_rows.error().message;
  p.edges = {{1, 1, {{0.0}}}};
  EXPECT_FALSE(solve_pbqp(p));
  p.edges = {{0, 3, {{0.0}, {0.0}}}};
  EXPECT_FALSE(solve_brute_force(p));
  p.edges.clear();
  p.node_costs.push_back({});
  auto empty = solve_selection(p);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("node 2 has no candidate"), std::string::npos);
}

}  // namespace
}  // namespace tensortune::tuner::graph_tuner
