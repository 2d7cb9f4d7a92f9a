#pragma once
/// \file
/// The reference interpreter: runs any graph of the IR, before or after passes, with plain
/// loops. It is the oracle that every pass and every compiled network is compared against,
/// so it favours obviousness over speed (outer loops are split over threads only to keep
/// test times sane; each output element is computed by one thread in a fixed order, so
/// results do not depend on the thread count).
#include <map>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"

namespace tensortune {
class ThreadPool;
}

namespace tensortune::graph {

/// Evaluates one node on concrete inputs (used by the interpreter and by FoldConstant).
/// Fails on data-dependent errors such as a gather index out of range.
Expected<Tensor> evaluate_node(const Node& node, const std::vector<const Tensor*>& inputs,
                               const TensorType& output_type);

/// Evaluates `node` whose inputs are `inputs` of `graph`: constants, except that the data
/// input of a shape node may be any value (only its type is read). Used by FoldConstant and
/// by importers that fold shape arithmetic.
Expected<Tensor> evaluate_on_constants(const Graph& graph, const Node& node,
                                       const std::vector<ValueId>& inputs,
                                       const TensorType& output_type);

/// While one is in scope on a thread, the interpreter's loops on that thread split over `pool`
/// (which counts the thread itself) instead of the default pool of one thread per core: an
/// executor scopes its own pool around interpreted steps, so that they keep to its thread
/// count. Scopes nest; the pool must outlive the scope.
class ScopedInterpreterPool {
 public:
  explicit ScopedInterpreterPool(ThreadPool& pool);
  ~ScopedInterpreterPool();
  ScopedInterpreterPool(const ScopedInterpreterPool&) = delete;
  ScopedInterpreterPool& operator=(const ScopedInterpreterPool&) = delete;

 private:
  ThreadPool* previous_;
};

/// Runs the graph. Every graph input must be bound by name with its exact type; the error
/// names a missing, unknown or mistyped input. Returns the graph outputs in order.
Expected<std::vector<Tensor>> interpret(const Graph& graph,
                                        const std::map<std::string, Tensor>& inputs);

}  // namespace tensortune::graph
