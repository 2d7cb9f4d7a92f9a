#pragma once
/// \file
/// One step of a fused epilogue: the vocabulary the fusion rules decide in (passes/) and every
/// back end's emitters apply (codegen/llvm/, codegen/cuda/). It sits below both, so that the
/// passes do not include the code generators. Header only: it names what a kernel applies to
/// its accumulator before the store, not how.

#include <algorithm>
#include <vector>

namespace tensortune::epilogue {

/// Applied in order to the accumulator. A channel operand holds one float per output channel
/// (conv2d: in channel order; dense: per output column); a tensor operand has the output's
/// layout and shape. Integer kernels (int32 accumulators) take kAddChannel of int32 operands
/// while the value is an integer, then kToFloat, after which the float steps follow; without
/// kToFloat they store int32.
struct EpilogueOp {
  /// kDivChannel divides by the channel's operand (a quantization's scale: not a multiply by
  /// its reciprocal, which rounds differently); kRound rounds half to even (QuantizeLinear's).
  /// kStoreTensor stores the float value so far into its tensor operand and goes on: a value
  /// that other kernels read (a residual) before the steps that quantize it for the next int8
  /// kernel, which the kernel's output then holds. kAddDequantized adds a uint8 tensor operand
  /// dequantized, (float(q) - zero_point) * scale, in that order (a residual read as the bytes
  /// the kernel before stored, a quarter of the float's traffic). kGelu and kGeluTanh: GELU in
  /// its erf form and its tanh approximation, for back ends whose epilogues compute it
  /// (FuseOpsOptions::gelu_in_epilogue).
  enum class Kind {
    kAddChannel,
    kMulChannel,
    kAddTensor,
    kMulTensor,
    kRelu,
    kClip,
    kToFloat,
    kDivChannel,
    kRound,
    kToUInt8,
    kToInt8,
    kStoreTensor,
    kAddDequantized,
    kGelu,
    kGeluTanh
  };
  Kind kind = Kind::kRelu;
  int operand = -1;                 ///< index into the kernel's epilogue operands
  float lo = 0, hi = 0;             ///< kClip
  float zero_point = 0, scale = 1;  ///< kAddDequantized
};

/// Whether the step takes an operand (a channel vector or a tensor it reads, or the tensor
/// kStoreTensor writes); the others are pure.
inline bool uses_operand(EpilogueOp::Kind kind) {
  using Kind = EpilogueOp::Kind;
  return kind == Kind::kAddChannel || kind == Kind::kMulChannel || kind == Kind::kDivChannel ||
         kind == Kind::kAddTensor || kind == Kind::kMulTensor || kind == Kind::kStoreTensor ||
         kind == Kind::kAddDequantized;
}

/// The epilogue ends by converting to bytes: the kernel's output is uint8 or int8.
inline bool stores_bytes(const std::vector<EpilogueOp>& epilogue) {
  return !epilogue.empty() && (epilogue.back().kind == EpilogueOp::Kind::kToUInt8 ||
                               epilogue.back().kind == EpilogueOp::Kind::kToInt8);
}

/// How many operands a kernel with this epilogue takes after its own arguments: the highest
/// operand index used, plus one. Not the epilogue's length: relu and clip take none, and a
/// kernel that declared one per step would read past the arguments its caller passes.
inline int epilogue_operand_count(const std::vector<EpilogueOp>& epilogue) {
  int n = 0;
  for (const EpilogueOp& op : epilogue) n = std::max(n, op.operand + 1);
  return n;
}

}  // namespace tensortune::epilogue
