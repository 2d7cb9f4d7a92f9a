#pragma once
/// \file
/// A text form of a graph for people: one line per node with its inputs, attributes, output
/// type and fusion group, then a summary line (nodes per operator, parameters).
#include <string>

#include "compiler/graph/graph.h"

namespace tensortune::graph {

std::string print_graph(const Graph& graph);

/// "52 nodes: conv2d 20, relu 17, ...; 11.69 M parameters (46.8 MB)".
std::string graph_summary(const Graph& graph);

/// 16 hex digits identifying the graph's structure, shapes and attributes (FNV-1a of its
/// printed form; weights' values are not read): what graph-best records are keyed by.
std::string graph_fingerprint(const Graph& graph);

}  // namespace tensortune::graph
