#pragma once
/// \file
/// Internal helper for passes: builds a new graph from an old one, node by node. Graph inputs
/// keep their order and names; constants are copied on first use, so a constant nobody reads
/// any more disappears from the result.
#include <vector>

#include "compiler/graph/graph.h"

namespace tensortune::passes {

/// Per value of `g`, the index of the node that alone reads it (once, and no graph output is it);
/// -1 for the others. What a pass asks before it takes a node's only consumer along.
std::vector<int> only_readers(const graph::Graph& g);

/// The node computing `v` where it is an `op` node; nullptr for other nodes, inputs, constants.
const graph::Node* producer_of(const graph::Graph& g, graph::ValueId v, graph::OpKind op);

class Rewriter {
 public:
  explicit Rewriter(const graph::Graph& source);

  graph::Graph& out() { return out_; }
  const graph::Graph& source() const { return source_; }

  /// The new value standing for an old one (copying an old constant on first use).
  graph::ValueId map(graph::ValueId old_id);
  void set(graph::ValueId old_id, graph::ValueId new_id) { map_[old_id] = new_id; }

  /// Copies a node with its inputs mapped (name, attributes and fusion group kept).
  Expected<graph::ValueId> copy(const graph::Node& node);
  /// Adds a node to the new graph (inputs are new ids).
  Expected<graph::ValueId> emit(graph::OpKind op, std::string name,
                                std::vector<graph::ValueId> inputs, graph::Attrs attrs = {});

  /// Sets the outputs and returns the new graph.
  graph::Graph finish();

 private:
  const graph::Graph& source_;
  graph::Graph out_;
  std::vector<graph::ValueId> map_;
};

}  // namespace tensortune::passes
