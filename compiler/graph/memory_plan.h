#pragma once
/// \file
/// A static memory plan: every intermediate tensor of a graph gets an offset in one arena,
/// and two tensors share bytes only when their lifetimes do not overlap. Lifetimes are
/// measured in execution steps (one step per fusion group, or per node when the graph is not
/// fused); a tensor lives from the step that produces it to the last step that reads it.
/// Graph inputs, outputs and constants are not planned (the caller owns them).
///
/// The placement is greedy by size (largest first, each at the lowest offset that does not
/// collide with an already placed tensor whose lifetime overlaps), as TFLite's arena planner
/// does; it is within a few percent of the lower bound (the largest set of tensors alive at
/// one step) on the zoo's networks.
#include <cstdint>
#include <vector>

#include "compiler/graph/graph.h"

namespace tensortune::graph {

struct PlannedBuffer {
  ValueId value = kNoValue;
  int64_t bytes = 0;
  int first_step = 0, last_step = 0;
  int64_t offset = -1;  ///< byte offset in the arena, aligned to `alignment`
};

/// A value that lives in another's buffer: a reshape, flatten, squeeze or unsqueeze of an
/// intermediate tensor (its bytes under another shape), a slice that keeps a prefix of its input
/// (the first rows of a padded GEMM's result), or a zero pad that only appends to its input
/// (rows added to a GEMM's operand: the root's buffer is planned large enough for them). It has
/// no buffer of its own, and the step that computes it copies nothing: a pad's step only sets
/// the root's bytes [zeroed_from, zeroed_to) to zero. `root` is the planned value whose buffer it
/// is.
struct BufferView {
  ValueId value = kNoValue, root = kNoValue;
  int64_t zeroed_from = 0, zeroed_to = 0;
};

struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;
  std::vector<BufferView> views;
  int64_t arena_bytes = 0;
  /// Bytes if every tensor had its own buffer, and the most bytes alive at any one step.
  int64_t unshared_bytes = 0, peak_live_bytes = 0;
};

/// Values produced inside a fusion group and read only inside it are not materialised and
/// not planned. Offsets are multiples of `alignment` (a power of two).
///
/// With `views`, an unfused reshape-like node (is_view_op), prefix slice (is_prefix_slice) or
/// appending zero pad (is_appending_zero_pad) whose input is a planned buffer and whose output is
/// not a graph output makes its output a view of that buffer, which then lives until the view's
/// last reader (chains of views share one root). A pad becomes a view only where its input
/// holds the whole root (nothing else in the root's buffer is overwritten by its zeros). For
/// executors that skip the views' copies and zero the pads' tails.
MemoryPlan plan_memory(const Graph& graph, int64_t alignment = 64, bool views = false);

/// Reshape, flatten, squeeze and unsqueeze: the output's bytes are the input's.
bool is_view_op(OpKind op);
/// A slice whose output is the first bytes of its input (step 1 from 0 on one axis, only
/// single leading entries before it, whole axes after it).
bool is_prefix_slice(const Graph& graph, const Node& node);
/// A constant pad of zeros to a float tensor whose output is its input followed by zeros (it
/// pads after one axis only, every axis before it of extent 1).
bool is_appending_zero_pad(const Graph& graph, const Node& node);

}  // namespace tensortune::graph
