#pragma once
/// \file
/// The graph tuner's optimisation problem, independent of graphs and layouts: choose one
/// candidate per node (a conv layer's schedule) to minimise the sum of every node's own cost
/// (the kernel's time) and every edge's cost for the pair of candidates at its ends (the layout
/// transform, if any, between a producer's output block and a consumer's input block). AutoTVM
/// solves it with a DP over the graph (DPTuner) or PBQP (PBQPTuner); both are here, with a
/// brute force that tests them. Nodes are numbered in a topological order of the network.
#include <cstdint>
#include <string>
#include <vector>

#include "support/error.h"

namespace tensortune::tuner::graph_tuner {

struct SelectionEdge {
  int from = 0, to = 0;  ///< node indices, from != to
  /// cost[i][j]: `from` takes candidate i and `to` candidate j.
  std::vector<std::vector<double>> cost;
};

struct SelectionProblem {
  /// node_costs[n][i]: node n with candidate i. Every node has at least one candidate.
  std::vector<std::vector<double>> node_costs;
  std::vector<SelectionEdge> edges;  ///< parallel edges add up

  int node_count() const { return static_cast<int>(node_costs.size()); }
  /// kInvalidArgument naming the first node or edge whose sizes do not fit.
  Status validate() const;
  /// The objective at `choice` (one candidate index per node).
  double cost(const std::vector<int>& choice) const;
};

struct Selection {
  std::vector<int> choice;  ///< a candidate index per node
  double cost = 0;
  /// True when the solver proved it optimal (DP, brute force, PBQP without the RN heuristic).
  bool exact = true;
  std::string method;  ///< "dp", "pbqp", "pbqp (RN heuristic at N nodes)", "brute force"
};

/// Every combination: for tests (kOutOfRange above `max_combinations`).
Expected<Selection> solve_brute_force(const SelectionProblem& problem,
                                      int64_t max_combinations = 1'000'000);

/// Dynamic programming in node order, keeping the candidates of the nodes that still have
/// neighbours ahead open (AutoTVM's DPTuner): exact on any graph, its state the product of the
/// open nodes' candidate counts; kOutOfRange when that would exceed `max_states`.
Expected<Selection> solve_dp(const SelectionProblem& problem, int64_t max_states = 200'000);

/// PBQP by reductions: R0, RI and RII are exact; where only nodes of degree 3 or more remain,
/// the RN heuristic fixes one (exact = false, and `method` says how often).
Expected<Selection> solve_pbqp(const SelectionProblem& problem);

/// DP when its state fits `max_dp_states`, else PBQP.
Expected<Selection> solve_selection(const SelectionProblem& problem,
                                    int64_t max_dp_states = 200'000);

}  // namespace tensortune::tuner::graph_tuner
