#pragma once
/// \file
/// Fewer steps for a fused epilogue, with the same results (NaN aside): what a quantized layer's
/// epilogue needs, since every step costs a vector operation per output, and the constants of
/// each step registers the kernel's tile would rather keep.
///
/// - A clip moves right past the monotone steps after it (a divide or multiply by one positive
///   scalar, an add of one scalar, a round), its bounds carried through the step as the step
///   computes them: f(clip(x, a, b)) = clip(f(x), f(a), f(b)) for a non-decreasing f.
/// - Two adjacent clips whose ranges overlap become one.
/// - On rounded values, a zero point added before a clip and subtracted after it folds into the
///   clip's bounds (integral values below 2^24 add exactly; larger ones saturate either way).
///
/// A quantize-dequantize pair after relu6 (clip 0..6, divide by s, round, add z, clip 0..255,
/// subtract z, multiply by s) becomes divide, round, multiply, one clip.
#include <vector>

#include "compiler/passes/fusion_rules.h"

namespace tensortune::passes {

std::vector<FusedOp> simplify_epilogue(std::vector<FusedOp> ops);

}  // namespace tensortune::passes
