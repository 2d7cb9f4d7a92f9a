#include "compiler/passes/simplify_epilogue.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tensortune::passes {

namespace {

using Kind = epilogue::EpilogueOp::Kind;

/// The one value of a channel operand that holds the same value for every channel.
std::optional<float> uniform(const FusedOp& op) {
  if (!op.param || op.param->f32.empty()) return std::nullopt;
  const float v = op.param->f32.front();
  for (float x : op.param->f32)
    if (x != v) return std::nullopt;
  return v;
}

/// The step applied to one float, when it is non-decreasing and the same for every channel.
std::optional<float> through(const FusedOp& op, float x) {
  switch (op.op.kind) {
    case Kind::kRound:
      return std::nearbyint(x);  // half to even in the default rounding mode, as kRound
    case Kind::kAddChannel:
      if (auto c = uniform(op)) return x + *c;
      return std::nullopt;
    case Kind::kMulChannel:
      if (auto c = uniform(op); c && *c > 0) return x * *c;
      return std::nullopt;
    case Kind::kDivChannel:
      if (auto c = uniform(op); c && *c > 0) return x / *c;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

bool is_clip(const FusedOp& op) { return op.op.kind == Kind::kClip; }

bool integral(float x) { return std::isinf(x) || x == std::nearbyint(x); }

/// One rewrite at position i, if any applies there.
bool rewrite_at(std::vector<FusedOp>& ops, size_t i) {
  // relu is a clip from 0 (x > 0 ? x : 0 and max(x, 0) differ only for NaN).
  if (ops[i].op.kind == Kind::kRelu) {
    ops[i].op.kind = Kind::kClip;
    ops[i].op.lo = 0;
    ops[i].op.hi = INFINITY;
    return true;
  }
  if (!is_clip(ops[i]) || i + 1 >= ops.size()) return false;
  FusedOp& next = ops[i + 1];
  if (is_clip(next)) {
    const float lo = std::max(ops[i].op.lo, next.op.lo), hi = std::min(ops[i].op.hi, next.op.hi);
    if (lo > hi) return false;  // disjoint: the second clip alone decides, but keep it plain
    next.op.lo = lo;
    next.op.hi = hi;
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i));
    return true;
  }
  // round, clip, [add z, clip, add -z]: handled when the clip reaches the second clip above.
  // round, add z, clip, add -z -> round, clip - z (this clip, after a round and an add of z).
  if (next.op.kind == Kind::kAddChannel && i >= 2 && ops[i - 1].op.kind == Kind::kAddChannel &&
      ops[i - 2].op.kind == Kind::kRound) {
    const auto z = uniform(ops[i - 1]), minus_z = uniform(next);
    if (z && minus_z && *z == -*minus_z && integral(*z) && integral(ops[i].op.lo) &&
        integral(ops[i].op.hi) && std::fabs(*z) < 16777216.0f) {
      const float lo = ops[i].op.lo - *z, hi = ops[i].op.hi - *z;
      if ((std::isinf(lo) || std::fabs(lo) < 8388608.0f) &&
          (std::isinf(hi) || std::fabs(hi) < 8388608.0f)) {
        FusedOp clip = ops[i];
        clip.op.lo = lo;
        clip.op.hi = hi;
        ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i - 1),
                  ops.begin() + static_cast<std::ptrdiff_t>(i + 2));
        ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(i - 1), std::move(clip));
        return true;
      }
    }
  }
  // clip, f -> f, clip(f(lo), f(hi)) for a monotone f.
  const auto lo = through(next, ops[i].op.lo), hi = through(next, ops[i].op.hi);
  if (!lo || !hi) return false;
  FusedOp clip = ops[i];
  clip.op.lo = *lo;
  clip.op.hi = *hi;
  ops[i] = std::move(next);
  ops[i + 1] = std::move(clip);
  return true;
}

}  // namespace

std::vector<FusedOp> simplify_epilogue(std::vector<FusedOp> ops) {
  // Each rewrite removes a step or moves a clip right, so this ends.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < ops.size() && !changed; ++i) changed = rewrite_at(ops, i);
  }
  return ops;
}

}  // namespace tensortune::passes
