#pragma once
/// \file
/// What a network kernel can fuse: the one rule that FuseOps uses to form groups and lowering
/// uses to build each group's kernel, so that the groups `inspect --print-after-each` shows are
/// the ones that run. Lowering never re-splits a group.
///
/// A kernel anchor is a float conv2d or conv2d_nchwc with groups 1 or depthwise (one output
/// channel per input channel), a float dense, a float matmul of two tensors with the same batch
/// axes, or an integer conv2d_nchwc (uint8 x int8), whose
/// epilogue begins with the cast of its int32 result to float. Its epilogue is a chain of
/// element-wise nodes over the anchor's output shape that the kernel spec's `EpilogueOp` vocabulary
/// expresses: relu, clip, round, a per-channel constant added, multiplied or divided by (bias_add,
/// add, subtract, multiply, divide: a quantize-dequantize pair fuses), or a tensor of the output's
/// shape added or multiplied (a residual), and last a quantizing cast of a value clipped to the
/// byte's range (the kernel stores bytes). Element-wise
/// chains of their own become one element-wise kernel when every value is float, or when the chain
/// ends in a quantizing cast (float32 to uint8 or int8).
#include <optional>
#include <utility>
#include <vector>

#include "compiler/epilogue/epilogue_op.h"
#include "compiler/graph/graph.h"
#include "schedule_space/workload.h"

namespace tensortune::passes {

/// bias_add and the unary and binary element-wise operators.
bool is_elementwise(graph::OpKind op);

/// Every input and the output of the node are float32.
bool is_float_node(const graph::Graph& g, const graph::Node& n);
/// is_float_node for every node listed.
bool all_float(const graph::Graph& g, const std::vector<int>& nodes);

/// A conv2d (NCHW) or conv2d_nchwc node as a workload with its data/output blocks (1 for NCHW).
struct ConvAnchor {
  schedule_space::Conv2dWorkload workload;
  int64_t ic_bn = 1, oc_bn = 1;
  bool depthwise = false;
};

/// A cast from float32 to uint8 or int8 (a quantization): it ends a float element-wise chain,
/// whose kernel stores bytes.
bool is_quantizing_cast(const graph::Graph& g, const graph::Node& n);

/// The range a float value is known to lie in: a clip's bounds, moved by the scalar constants
/// added after it. Nothing when the graph does not say.
std::optional<std::pair<double, double>> known_range(const graph::Graph& g, graph::ValueId v);

/// A conv2d_nchwc of uint8 data by int8 weights (the data's zero point a constant) that a
/// registered template computes: an int8 kernel's anchor, whose epilogue starts with the cast of
/// its int32 result to float.
bool is_integer_conv(const graph::Graph& g, const graph::Node& n);

/// A dense of uint8 data by int8 weights (the data's zero point a constant) that a registered
/// template computes: the int8 dense kernel's anchor, with the integer convolution's epilogue
/// rule.
bool is_integer_dense(const graph::Graph& g, const graph::Node& n);

/// The precision of an integer convolution or dense by `weight`: kUInt8Int7 when the weight is a
/// constant whose values all lie in schedule_space::weight_range(kUInt8Int7), else kUInt8Int8.
schedule_space::Precision integer_precision(const graph::Graph& g, graph::ValueId weight);

/// The convolution a kernel computes for `n` (an integer one with integer_precision);
/// nothing for other nodes and for grouped convolutions that are not depthwise.
std::optional<ConvAnchor> conv_anchor(const graph::Graph& g, const graph::Node& n);

/// A float matmul of two operands with the same batch axes ([..., M, K] by [..., K, N], a
/// constant second operand too) as the batch matmul a template computes, its batch axes folded
/// into one; nothing for other nodes and for broadcasting matmuls.
std::optional<schedule_space::BatchMatmulWorkload> batch_matmul_anchor(const graph::Graph& g,
                                                                       const graph::Node& n);

/// softmax(scale * q k + mask) v of these float shapes (q [..., M, K], k [..., K, N], v [..., N,
/// Dv], the mask, if any, broadcasting to [..., M, N]) as the workload a template computes: the
/// batch axes folded into one, the mask's as those of its leading batch axes that it does not
/// broadcast (the rest broadcast: a model's batch axis over its heads). Nothing for a mask that
/// broadcasts otherwise (along the keys, or over a leading axis it then does not broadcast over
/// the next) and where no template computes it.
std::optional<schedule_space::AttentionWorkload> attention_workload(const graph::Shape& q,
                                                                    const graph::Shape& k,
                                                                    const graph::Shape& v,
                                                                    const graph::Shape* mask,
                                                                    double scale);

/// An attention node (FuseAttention's) as its workload (attention_workload).
std::optional<schedule_space::AttentionWorkload> attention_anchor(const graph::Graph& g,
                                                                  const graph::Node& n);

/// A float dense, a convolution `conv_anchor` accepts, with float operands, a matmul
/// `batch_matmul_anchor` accepts, or an attention node `attention_anchor` accepts.
bool is_kernel_anchor(const graph::Graph& g, const graph::Node& n);

/// A float value computed from bytes as a dequantization, (float(q) - z) * s: multiply(
/// subtract(cast(q), z), s) with scalar constants z and s (z = 0 without the subtract), q a
/// uint8 tensor, each intermediate read once. A kernel adds such a value to its result reading
/// q itself (EpilogueOp::kAddDequantized); the chain's nodes join the kernel's group and compute
/// nothing of their own.
struct DequantizedBytes {
  graph::ValueId bytes = graph::kNoValue;
  float zero_point = 0, scale = 1;
  std::vector<int> nodes;  ///< the chain, in graph order
};
std::optional<DequantizedBytes> dequantized_bytes(const graph::Graph& g, graph::ValueId v);

/// One epilogue node as the kernel applies it: the op, and its operand (a per-channel constant,
/// already negated for a subtraction, or a value read in the output's layout).
struct FusedOp {
  epilogue::EpilogueOp op;
  std::optional<graph::Tensor> param;      ///< channel ops
  graph::ValueId value = graph::kNoValue;  ///< tensor ops
};

/// The epilogue node `n` applied to the chain value `v` (the running result of the anchor
/// `anchor`), if the anchor's kernel can fuse it. An add of a dequantized_bytes operand is
/// kAddDequantized of its bytes: the caller reads them only where the chain joined the group
/// (and the float the chain computes otherwise).
std::optional<FusedOp> fuse_epilogue_node(const graph::Graph& g, const graph::Node& anchor,
                                          const graph::Node& n, graph::ValueId v);

}  // namespace tensortune::passes
