#pragma once
/// \file
/// Layout transforms between the plain layouts users hold and the blocked layouts kernels use.
///   NCHW <-> NCHW[x]c:   (N, C, H, W) <-> (N, C/x, H, W, x); element (n,c,h,w) at [n, c/x, h, w,
///   c%x] OIHW -> OIHW[x]i[y]o: (O, I, KH, KW) -> (O/y, I/x, KH, KW, x, y) dense (N, K) -> (N/bn,
///   K, bn)
/// Block sizes must divide the blocked axis (TT_CHECKed: callers validate first).

#include <cstdint>

#include "support/tensor.h"

namespace tensortune::schedule_space {

/// Any dtype (the int8 templates move uint8 data and int32 outputs through these too).
Tensor pack_nchwc(const Tensor& nchw, int64_t block);
Tensor unpack_nchwc(const Tensor& nchwc);
Tensor pack_oihwio(const Tensor& oihw, int64_t ic_block, int64_t oc_block);
/// OIHW[x]i[y]o -> OIHW, the blocks read from the shape.
Tensor unpack_oihwio(const Tensor& oihwio);
Tensor pack_dense_weight(const Tensor& nk, int64_t block);

}  // namespace tensortune::schedule_space
