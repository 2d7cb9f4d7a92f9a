// Implements the problem's checks, its objective, the brute force and the solver choice.
#include "tuner/graph_tuner/selection_problem.h"

#include <limits>

namespace tensortune::tuner::graph_tuner {

Status SelectionProblem::validate() const {
  for (int n = 0; n < node_count(); ++n)
    if (node_costs[static_cast<size_t>(n)].empty())
      return invalid_argument("node " + std::to_string(n) + " has no candidate");
  for (size_t e = 0; e < edges.size(); ++e) {
    const SelectionEdge& edge = edges[e];
    const std::string name = "edge " + std::to_string(e) + " (" + std::to_string(edge.from) +
                             " -> " + std::to_string(edge.to) + ")";
    if (edge.from < 0 || edge.to < 0 || edge.from >= node_count() || edge.to >= node_count())
      return invalid_argument(name + " names a node that does not exist");
    if (edge.from == edge.to) return invalid_argument(name + " joins a node to itself");
    const size_t rows = node_costs[static_cast<size_t>(edge.from)].size();
    const size_t cols = node_costs[static_cast<size_t>(edge.to)].size();
    if (edge.cost.size() != rows)
      return invalid_argument(name + " has " + std::to_string(edge.cost.size()) +
                              " rows, its source has " + std::to_string(rows) + " candidates");
    for (const auto& row : edge.cost)
      if (row.size() != cols)
        return invalid_argument(name + " has a row of " + std::to_string(row.size()) +
                                " costs, its target has " + std::to_string(cols) + " candidates");
  }
  return ok_status();
}

double SelectionProblem::cost(const std::vector<int>& choice) const {
  double s = 0;
  for (int n = 0; n < node_count(); ++n)
    s += node_costs[static_cast<size_t>(n)][static_cast<size_t>(choice[static_cast<size_t>(n)])];
  for (const SelectionEdge& e : edges)
    s += e.cost[static_cast<size_t>(choice[static_cast<size_t>(e.from)])]
               [static_cast<size_t>(choice[static_cast<size_t>(e.to)])];
  return s;
}

Expected<Selection> solve_brute_force(const SelectionProblem& problem, int64_t max_combinations) {
  TT_RETURN_IF_ERROR(problem.validate());
  int64_t combinations = 1;
  for (const auto& c : problem.node_costs) {
    combinations *= static_cast<int64_t>(c.size());
    if (combinations > max_combinations)
      return Error{ErrorCode::kOutOfRange,
                   "more than " + std::to_string(max_combinations) + " combinations to enumerate"};
  }
  Selection best;
  best.method = "brute force";
  best.cost = std::numeric_limits<double>::infinity();
  std::vector<int> choice(static_cast<size_t>(problem.node_count()), 0);
  for (int64_t k = 0; k < combinations; ++k) {
    int64_t rest = k;
    for (size_t n = 0; n < choice.size(); ++n) {
      const auto size = static_cast<int64_t>(problem.node_costs[n].size());
      choice[n] = static_cast<int>(rest % size);
      rest /= size;
    }
    const double c = problem.cost(choice);
    if (c < best.cost) {
      best.cost = c;
      best.choice = choice;
    }
  }
  if (problem.node_count() == 0) best.cost = 0;
  return best;
}

Expected<Selection> solve_selection(const SelectionProblem& problem, int64_t max_dp_states) {
  auto dp = solve_dp(problem, max_dp_states);
  if (dp || dp.error().code != ErrorCode::kOutOfRange) return dp;
  return solve_pbqp(problem);
}

}  // namespace tensortune::tuner::graph_tuner
