#pragma once
/// \file
/// A network as the graph tuner's selection problem (selection_problem.h): one problem node per
/// conv2d (groups 1, constant weights) of the NCHW graph, its candidates the fastest record of
/// each (ic_bn, oc_bn) pair of its workload (the top k by time; a workload without records has
/// its default config alone); edges where a conv's output reaches another conv's input through
/// ops that keep the layout (element-wise, pooling, batch norm, depthwise convs), and between
/// the two operands of a binary element-wise op (a residual add takes both in one layout, and a
/// mismatch also costs the add its fusion into the conv: priced as a second transform);
/// unary costs for the transforms from and back to NCHW at the network's edges (its input,
/// flatten, dense, its outputs). A transform costs nothing where the blocks agree, else what
/// the cost function says (measured: transform_costs.h).
#include <functional>
#include <string>
#include <vector>

#include "compiler/driver/tuned_configs.h"
#include "compiler/graph/graph.h"
#include "tuner/graph_tuner/selection_problem.h"

namespace tensortune::tuner::graph_tuner {

/// One layout transform: a float tensor of NCHW `shape` from channel blocks of `from` to `to`
/// (1 is plain NCHW).
struct Transform {
  graph::Shape shape;
  int64_t from = 1, to = 1;
  friend bool operator<(const Transform& a, const Transform& b) {
    return std::tie(a.shape, a.from, a.to) < std::tie(b.shape, b.from, b.to);
  }
};
using TransformCostFn = std::function<double(const Transform&)>;

struct NetworkProblem {
  SelectionProblem problem;
  std::vector<std::string> nodes;  ///< conv node names, in problem order
  std::vector<schedule_space::Conv2dWorkload> workloads;
  std::vector<std::vector<driver::TunedConfigs::Candidate>> candidates;  ///< fastest first
  std::vector<bool> tuned;  ///< false: the node has only its default config
};

/// The transforms the problem would price (distinct, sorted): what to measure before building
/// it with those costs.
std::vector<Transform> transforms_needed(const graph::Graph& model,
                                         const driver::TunedConfigs& tuned,
                                         const schedule_space::Target& target, int top_k);

/// `model` is the graph before AlterOpLayout (NCHW convolutions).
NetworkProblem build_network_problem(const graph::Graph& model, const driver::TunedConfigs& tuned,
                                     const schedule_space::Target& target, int top_k,
                                     const TransformCostFn& cost);

}  // namespace tensortune::tuner::graph_tuner
