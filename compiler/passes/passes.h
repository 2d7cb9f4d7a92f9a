#pragma once
/// \file
/// The passes, each a Pass value with its opt level and one-line contract, and the standard
/// pipeline. Levels follow TVM's: what changes numerics or layouts sits at 3.
///
///   pass                   level  prerequisites
///   FakeQuantizationToInt.   3    -
///   SimplifyInference        0    -
///   FoldPad                  1    -
///   FoldConstant             2    -
///   FoldScaleAxis            3    SimplifyInference
///   DenseFromMatMul          3    -
///   FuseAttention            3    -
///   PadGemmShapes            3    -
///   FuseGelu                 3    -
///   FuseLayerNorm            3    -
///   AlterOpLayout            3    -
///   ResidualsAsBytes         3    FakeQuantizationToInteger
///   DeadCodeElimination      0    -
///   FuseOps                  1    -
#include <functional>
#include <optional>
#include <string>

#include "compiler/passes/pass.h"
#include "schedule_space/task.h"

namespace tensortune::passes {

/// batch_norm -> multiply + add by per-channel constants; bias_add -> broadcast add;
/// identity removed.
Pass simplify_inference();

/// Every node whose inputs are all constants, and every shape of a known shape, becomes a
/// constant.
Pass fold_constant();

struct FoldScaleAxisOptions {
  /// Test-only: let scales cross relu whatever their sign and try forward folding first.
  /// This is NNVM's old bug (relu(s*x) != s*relu(x) for s < 0), kept so that a test can
  /// show that the zoo's negative batch-norm scales catch it.
  bool unsafe_ignore_sign = false;
};

/// Folds per-channel constant multiplies into conv2d/dense weights: backward into the
/// producer (through a per-channel bias add; through relu only for positive scales), then
/// forward into the consumer (through a per-channel add for non-zero scales and through relu
/// only for positive scales). The answer is unchanged up to rounding.
Pass fold_scale_axis(FoldScaleAxisOptions options = {});

/// Block sizes of one conv2d in NCHW[x]c.
struct ConvBlocks {
  int64_t ic_bn = 1, oc_bn = 1;
};
struct AlterOpLayoutOptions {
  /// float32 lanes of the target's widest vector (blocks of depthwise convs).
  int vector_lanes = 16;
  /// The target the network compiles for: without choose_blocks, a conv2d takes the blocks of
  /// its template's default config there (schedule_space::fallback_blocks).
  schedule_space::Target target;
  /// Block sizes for a conv2d (groups 1); empty means the template's default config, as
  /// AutoTVM falls back to when no record exists.
  std::function<ConvBlocks(const schedule_space::Conv2dWorkload&)> choose_blocks;
  /// Blocks for one conv node by name, before choose_blocks (graph-tuned records choose per
  /// node); nothing: choose_blocks decides.
  std::function<std::optional<ConvBlocks>(const std::string& node)> node_blocks;
  /// Blocks a depthwise conv2d's records chose (in and out may differ: the kernel re-blocks as
  /// it goes); nothing, or no function: the node keeps its input's block (no transform), and
  /// with a plain input the widest vector block that divides the channels.
  std::function<std::optional<ConvBlocks>(const schedule_space::Conv2dWorkload&)> depthwise_blocks;
};

/// conv2d (groups 1 or depthwise) in NCHW -> conv2d_nchwc with pre-packed constant weights;
/// element-wise ops, pooling and per-channel constants follow the blocked layout; a
/// layout_transform is inserted only where a consumer needs another layout.
Pass alter_op_layout(AlterOpLayoutOptions options = {});

/// A conv2d or dense whose data and weight are dequantized 8-bit values (QuantizeLinear ->
/// DequantizeLinear -> Conv / Gemm, as the importer composes them) becomes conv2d_integer (or
/// an integer dense) of uint8 data (int8 data shifted by 128), int8 weights and the data's zero
/// point, cast to float and times a per-channel multiplier (data scale x weight scale): exact
/// integer sums instead of float ones. Only operators whose workload (Precision::kUInt8Int8)
/// `runs_in_integers` accepts (a kernel serves them) are rewritten; an empty function accepts
/// all. Runs before FoldConstant, which would fold the weights'
/// dequantization away.
Pass fake_quantization_to_integer(
    std::function<bool(const schedule_space::Workload&)> runs_in_integers = {});

/// Removes nodes and constants that no output depends on.
Pass dead_code_elimination();

/// A constant-zero spatial pad of NCHW data in front of a conv2d, or of an avg_pool2d that
/// counts padding (or has none of its own), moves into the consumer's pads.
Pass fold_pad();

/// A float matmul of an activation (rank >= 2) by a constant [K, N] weight becomes a dense
/// over its rows (reshape to [M, K], the weight transposed to [N, K], reshape back).
Pass dense_from_matmul();

/// PadGemmShapes (level 3): a float dense or batch matmul whose rows (more than 16, not a
/// multiple of 4: a ViT's 197 tokens, a Swin window's 49) or columns (at least 32, no divisor in
/// [16, 64] that is a multiple of 8: a vocabulary of 50257; a dense's only with a constant weight)
/// no register tile divides computes them zero-padded to a multiple of 8 (rows) or 16 (columns),
/// then a slice keeps the first ones.
Pass pad_gemm_shapes();
/// FuseGelu (level 3): GELU's exported formula (x * 0.5 * (1 + erf(x / sqrt 2)), or its tanh
/// approximation, in their orders) becomes one gelu node; a gelu whose input is a reshape or prefix
/// slice of a value read by it alone is computed before them, where the kernel producing that value
/// takes it into its epilogue.
Pass fuse_gelu();
/// The batch matmul PadGemmShapes computes for `w` (w itself where it pads nothing).
schedule_space::BatchMatmulWorkload padded_batch_matmul(schedule_space::BatchMatmulWorkload w);

/// FuseAttention (level 3): a matmul of two activations, optionally times or divided by a
/// scalar constant, optionally plus masks (or a constant causal mask written as Where(c, x,
/// -1e30 or less)), softmax over the keys, then a matmul by the values
/// (MatMul + Softmax attention as exporters write it), each intermediate read only by the next,
/// becomes one attention node where `served` says a template of the target computes its
/// workload (fusion_rules.h's attention_workload).
Pass fuse_attention(std::function<bool(const schedule_space::Workload&)> served);

/// LayerNorm's exported chain (mean, subtract, square, mean, add eps, sqrt, divide, optionally
/// * gamma + beta with constants) over trailing axes becomes one layer_norm node.
Pass fuse_layer_norm();

struct FuseOpsOptions {
  /// A kernel's epilogue may go on past a float value that other groups read too, when what
  /// follows quantizes it for an int8 kernel (a residual network's sum, read by the next block's
  /// add and, as bytes, by its first convolution): the kernel stores the value midway
  /// (EpilogueOp::kStoreTensor) and the bytes at the end, instead of a separate kernel reading
  /// the float value back to quantize it. For back ends whose kernels store midway (LLVM's).
  bool store_midway = false;
  /// A kernel's add of a dequantization of bytes ((float(q) - z) * s, fusion_rules.h's
  /// dequantized_bytes) reads the bytes (EpilogueOp::kAddDequantized), the dequantizing nodes
  /// joining its group. For back ends whose kernels read byte operands (LLVM's).
  bool dequantize_in_epilogue = false;
  /// A kernel's epilogue takes a GELU (EpilogueOp::kGelu, kGeluTanh). For back ends whose
  /// epilogues compute it (LLVM's); elsewhere it runs as an element-wise kernel.
  bool gelu_in_epilogue = false;
  /// Set: a batch matmul (fusion_rules.h's batch_matmul_anchor) whose workload this returns false
  /// for, no template of the back end serving it, is no anchor: it stays alone and runs natively.
  std::function<bool(const schedule_space::Workload&)> batch_matmul_served;
};

/// In a quantized residual network, a kernel's sum of a dequantized residual ((S - z) * s,
/// S integral in [0, 255]) reads the residual's bytes instead of the float the kernel before
/// stored: the add's operand becomes the dequantization of the bytes the next layer reads (or,
/// where none does, of new bytes the kernel computing S stores instead), which FuseOps folds
/// into the adding kernel (FuseOpsOptions::dequantize_in_epilogue). The same sums, bit for bit.
/// Only adds whose other operand is a kernel's fused chain are rewritten.
Pass residuals_as_bytes();

/// Marks fusion groups, the ones that run (fusion_rules.h): a kernel anchor (conv2d, dense)
/// with the chain of epilogues its kernel fuses (bias, add, relu, clip, ...), float chains of
/// element-wise ops, every other node alone.
Pass fuse_ops(FuseOpsOptions options = {});

struct PipelineOptions {
  /// false: AlterOpLayout is left out and convolutions stay NCHW (the CUDA back end's kernels,
  /// the plain CUDA templates, as AutoTVM has them, take NCHW).
  bool alter_layout = true;
  /// false: PadGemmShapes is left out (back ends whose kernels run elsewhere than the host,
  /// where its pads and slices would be host steps between device kernels).
  bool pad_gemm_shapes = true;
  AlterOpLayoutOptions layout;
  FoldScaleAxisOptions fold_scale;
  /// Set: FakeQuantizationToInteger runs (first) for the workloads it accepts.
  std::function<bool(const schedule_space::Workload&)> integer_ops;
  /// Set: FuseAttention runs for the attention workloads it accepts.
  std::function<bool(const schedule_space::Workload&)> attention;
  /// FuseOps' options; with fuse.dequantize_in_epilogue, ResidualsAsBytes runs before it.
  FuseOpsOptions fuse;
};

/// SimplifyInference, FoldConstant, FoldScaleAxis, AlterOpLayout, FoldConstant,
/// DeadCodeElimination, FuseOps; run it with run_pipeline at the wanted opt level.
std::vector<Pass> standard_pipeline(PipelineOptions options = {});

}  // namespace tensortune::passes
