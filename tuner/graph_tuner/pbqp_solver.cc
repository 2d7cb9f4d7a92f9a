// solve_pbqp (selection_problem.h): the classic PBQP reductions (Scholz and Eckstein). A node of
// degree 0 is decided last by its own costs (R0); a node of degree 1 folds into its neighbour's
// costs (RI); a node of degree 2 folds into an edge between its two neighbours (RII). All three
// keep the optimum. When every remaining node has degree 3 or more, RN fixes the node of the
// largest degree at its locally best candidate, which may lose the optimum: the result says so.
// Decisions are then made in the reverse order of the reductions.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "tuner/graph_tuner/selection_problem.h"

namespace tensortune::tuner::graph_tuner {
namespace {

using Matrix = std::vector<std::vector<double>>;

class Pbqp {
 public:
  explicit Pbqp(const SelectionProblem& p)
      : costs_(p.node_costs), neighbours_(p.node_costs.size()) {
    for (const SelectionEdge& e : p.edges) add_edge(e.from, e.to, e.cost);
  }

  Selection solve() {
    const int n = static_cast<int>(costs_.size());
    std::vector<bool> alive(static_cast<size_t>(n), true);
    for (int remaining = n; remaining > 0; --remaining) {
      int u = -1;
      for (size_t degree = 0; degree <= 2 && u < 0; ++degree)
        for (int x = 0; x < n && u < 0; ++x)
          if (alive[static_cast<size_t>(x)] && neighbours_[static_cast<size_t>(x)].size() == degree)
            u = x;
      if (u < 0) {  // RN on the node of the largest degree
        size_t widest = 0;
        for (int x = 0; x < n; ++x)
          if (alive[static_cast<size_t>(x)] &&
              neighbours_[static_cast<size_t>(x)].size() > widest) {
            widest = neighbours_[static_cast<size_t>(x)].size();
            u = x;
          }
        reduce_rn(u);
      } else {
        const auto& adj = neighbours_[static_cast<size_t>(u)];
        if (adj.empty())
          reductions_.push_back({Kind::kR0, u, -1, -1, {}, 0, costs_[static_cast<size_t>(u)]});
        else if (adj.size() == 1)
          reduce_ri(u, *adj.begin());
        else
          reduce_rii(u, *adj.begin(), *std::next(adj.begin()));
      }
      alive[static_cast<size_t>(u)] = false;
    }
    Selection s;
    s.choice.assign(static_cast<size_t>(n), 0);
    for (auto r = reductions_.rbegin(); r != reductions_.rend(); ++r) {
      int& pick = s.choice[static_cast<size_t>(r->u)];
      switch (r->kind) {
        case Kind::kR0:
          pick = static_cast<int>(std::min_element(r->own.begin(), r->own.end()) - r->own.begin());
          break;
        case Kind::kRI:
          pick = r->argmin[static_cast<size_t>(s.choice[static_cast<size_t>(r->v)])];
          break;
        case Kind::kRII:
          pick = r->argmin[static_cast<size_t>(s.choice[static_cast<size_t>(r->v)]) * r->w_size +
                           static_cast<size_t>(s.choice[static_cast<size_t>(r->w)])];
          break;
        case Kind::kRN:
          pick = r->argmin.front();
          break;
      }
    }
    s.exact = rn_count_ == 0;
    s.method = s.exact ? "pbqp" : "pbqp (RN heuristic at " + std::to_string(rn_count_) + " nodes)";
    return s;
  }

 private:
  enum class Kind { kR0, kRI, kRII, kRN };
  struct Reduction {
    Kind kind;
    int u, v, w;
    std::vector<int> argmin;  ///< RI: by v's choice; RII: by v's * w_size + w's; RN: the fixed one
    size_t w_size = 0;
    std::vector<double> own;  ///< R0: the node's final costs
  };

  size_t size(int u) const { return costs_[static_cast<size_t>(u)].size(); }

  /// The cost of edge u-v with u at candidate i and v at j, whichever way it is stored.
  double edge(int u, size_t i, int v, size_t j) const {
    if (u < v) return edges_.at({u, v})[i][j];
    return edges_.at({v, u})[j][i];
  }

  void add_edge(int from, int to, const Matrix& m) {
    const int a = std::min(from, to), b = std::max(from, to);
    Matrix& stored = edges_[{a, b}];
    if (stored.empty()) stored.assign(size(a), std::vector<double>(size(b), 0.0));
    for (size_t i = 0; i < size(from); ++i)
      for (size_t j = 0; j < size(to); ++j) (from == a ? stored[i][j] : stored[j][i]) += m[i][j];
    neighbours_[static_cast<size_t>(a)].insert(b);
    neighbours_[static_cast<size_t>(b)].insert(a);
  }

  void remove_edge(int u, int v) {
    edges_.erase({std::min(u, v), std::max(u, v)});
    neighbours_[static_cast<size_t>(u)].erase(v);
    neighbours_[static_cast<size_t>(v)].erase(u);
  }

  void reduce_ri(int u, int v) {
    Reduction r{Kind::kRI, u, v, -1, std::vector<int>(size(v)), 0, {}};
    const auto& cu = costs_[static_cast<size_t>(u)];
    for (size_t j = 0; j < size(v); ++j) {
      double best = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < cu.size(); ++i)
        if (const double c = cu[i] + edge(u, i, v, j); c < best) {
          best = c;
          r.argmin[j] = static_cast<int>(i);
        }
      costs_[static_cast<size_t>(v)][j] += best;
    }
    remove_edge(u, v);
    reductions_.push_back(std::move(r));
  }

  void reduce_rii(int u, int v, int w) {
    Reduction r{Kind::kRII, u, v, w, std::vector<int>(size(v) * size(w)), size(w), {}};
    const auto& cu = costs_[static_cast<size_t>(u)];
    Matrix folded(size(v), std::vector<double>(size(w)));
    for (size_t j = 0; j < size(v); ++j)
      for (size_t k = 0; k < size(w); ++k) {
        double best = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < cu.size(); ++i)
          if (const double c = cu[i] + edge(u, i, v, j) + edge(u, i, w, k); c < best) {
            best = c;
            r.argmin[j * size(w) + k] = static_cast<int>(i);
          }
        folded[j][k] = best;
      }
    remove_edge(u, v);
    remove_edge(u, w);
    add_edge(v, w, folded);
    reductions_.push_back(std::move(r));
  }

  void reduce_rn(int u) {
    const auto& cu = costs_[static_cast<size_t>(u)];
    const std::vector<int> adj(neighbours_[static_cast<size_t>(u)].begin(),
                               neighbours_[static_cast<size_t>(u)].end());
    size_t fixed = 0;
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < cu.size(); ++i) {
      double local = cu[i];
      for (int v : adj) {
        double cheapest = std::numeric_limits<double>::infinity();
        for (size_t j = 0; j < size(v); ++j)
          cheapest = std::min(cheapest, edge(u, i, v, j) + costs_[static_cast<size_t>(v)][j]);
        local += cheapest;
      }
      if (local < best) {
        best = local;
        fixed = i;
      }
    }
    for (int v : adj) {
      for (size_t j = 0; j < size(v); ++j)
        costs_[static_cast<size_t>(v)][j] += edge(u, fixed, v, j);
      remove_edge(u, v);
    }
    reductions_.push_back({Kind::kRN, u, -1, -1, {static_cast<int>(fixed)}, 0, {}});
    ++rn_count_;
  }

  std::vector<std::vector<double>> costs_;
  std::vector<std::set<int>> neighbours_;
  std::map<std::pair<int, int>, Matrix> edges_;  ///< (a < b): rows are a's candidates
  std::vector<Reduction> reductions_;
  int rn_count_ = 0;
};

}  // namespace

Expected<Selection> solve_pbqp(const SelectionProblem& problem) {
  TT_RETURN_IF_ERROR(problem.validate());
  Selection s = Pbqp(problem).solve();
  s.cost = problem.cost(s.choice);
  return s;
}

}  // namespace tensortune::tuner::graph_tuner
