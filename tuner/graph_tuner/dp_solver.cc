// solve_dp (selection_problem.h): variable elimination in node order. A state assigns a
// candidate to every open node (processed, with a neighbour still ahead); states that agree on
// the open nodes are merged keeping the cheaper, which is exact because a closed node's cost no
// longer depends on anything undecided. Each state carries its whole assignment, so no
// back-tracking pass is needed.
#include <algorithm>
#include <limits>
#include <map>

#include "tuner/graph_tuner/selection_problem.h"

namespace tensortune::tuner::graph_tuner {
namespace {

/// An edge seen from its later end: the earlier node and how to read the cost matrix.
struct Incoming {
  int earlier = 0;
  const std::vector<std::vector<double>>* cost = nullptr;
  bool earlier_is_row = true;

  double at(int earlier_choice, int later_choice) const {
    const auto e = static_cast<size_t>(earlier_choice), l = static_cast<size_t>(later_choice);
    return earlier_is_row ? (*cost)[e][l] : (*cost)[l][e];
  }
};

struct State {
  double cost = 0;
  std::vector<int> choice;  ///< by node; -1 where not yet processed
};

}  // namespace

Expected<Selection> solve_dp(const SelectionProblem& problem, int64_t max_states) {
  TT_RETURN_IF_ERROR(problem.validate());
  const int n = problem.node_count();
  std::vector<std::vector<Incoming>> incoming(static_cast<size_t>(n));
  std::vector<int> last_neighbour(static_cast<size_t>(n), -1);
  for (const SelectionEdge& e : problem.edges) {
    const int earlier = std::min(e.from, e.to), later = std::max(e.from, e.to);
    incoming[static_cast<size_t>(later)].push_back({earlier, &e.cost, e.from == earlier});
    last_neighbour[static_cast<size_t>(earlier)] =
        std::max(last_neighbour[static_cast<size_t>(earlier)], later);
  }

  std::vector<int> open;  // ascending
  std::map<std::vector<int>, State> states;
  states.emplace(std::vector<int>{}, State{0, std::vector<int>(static_cast<size_t>(n), -1)});
  for (int v = 0; v < n; ++v) {
    const auto& costs = problem.node_costs[static_cast<size_t>(v)];
    const int64_t expanded =
        static_cast<int64_t>(states.size()) * static_cast<int64_t>(costs.size());
    if (expanded > max_states)
      return Error{ErrorCode::kOutOfRange,
                   "the DP state at node " + std::to_string(v) + " would hold " +
                       std::to_string(expanded) + " assignments of " +
                       std::to_string(open.size() + 1) + " open nodes (limit " +
                       std::to_string(max_states) + ")"};
    std::vector<int> next_open;
    for (int u : open)
      if (last_neighbour[static_cast<size_t>(u)] > v) next_open.push_back(u);
    if (last_neighbour[static_cast<size_t>(v)] > v) next_open.push_back(v);

    std::map<std::vector<int>, State> next;
    std::vector<int> key(next_open.size());
    for (const auto& [_, state] : states) {
      for (size_t c = 0; c < costs.size(); ++c) {
        double cost = state.cost + costs[c];
        for (const Incoming& in : incoming[static_cast<size_t>(v)])
          cost += in.at(state.choice[static_cast<size_t>(in.earlier)], static_cast<int>(c));
        for (size_t k = 0; k < next_open.size(); ++k)
          key[k] = next_open[k] == v ? static_cast<int>(c)
                                     : state.choice[static_cast<size_t>(next_open[k])];
        auto it = next.find(key);
        if (it == next.end()) {
          it = next.emplace(key, State{std::numeric_limits<double>::infinity(), {}}).first;
        }
        if (cost < it->second.cost) {
          it->second.cost = cost;
          it->second.choice = state.choice;
          it->second.choice[static_cast<size_t>(v)] = static_cast<int>(c);
        }
      }
    }
    states = std::move(next);
    open = std::move(next_open);
  }

  Selection best;
  best.method = "dp";
  best.cost = std::numeric_limits<double>::infinity();
  for (const auto& [_, state] : states)
    if (state.cost < best.cost) {
      best.cost = state.cost;
      best.choice = state.choice;
    }
  if (n == 0) best.cost = 0;
  best.cost = problem.cost(best.choice);  // the same sum, in the problem's own order
  return best;
}

}  // namespace tensortune::tuner::graph_tuner
