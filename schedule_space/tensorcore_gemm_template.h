#pragma once
/// \file
/// The tensor-core templates, AutoTVM's dense_tensorcore.cuda and batch_matmul_tensorcore.cuda
/// (topi/cuda/dense_tensorcore.py, batch_matmul_tensorcore.py): y[b, M, N] = x[b, M, K] w[b]^T
/// at a reduced float precision (tf32, float16, bfloat16): float32 buffers and float32
/// accumulation, products of rounded inputs on the tensor cores (PTX mma.sync: m16n8k8 for tf32,
/// m16n8k16 for float16 and bfloat16), sm_80 or newer. Dense is the case of one batch entry and
/// w as [N, K]; batch matmul takes w as [B, N, K] (AutoTVM's only form) or [B, K, N]
/// (exporters').
///
/// AutoTVM's knobs, names and order, so that its float16 logs import with its indices:
/// block_row_warps and block_col_warps {1, 2, 4} (the warps of a block along M and N),
/// warp_row_tiles and warp_col_tiles {1, 2, 4} (the fragment tiles of a warp along M and N),
/// chunk {1, 2, 4, 8} (fragment tiles of K staged per step), offset {0, 8} (elements of padding
/// after each staged row: shifts the rows' banks), offsetCS {0, 8} (the same for the staged
/// output), vec {1, 2, 4, 8} (floats per global load), and for float16 and bfloat16 wmma_m, the
/// fragment tile's rows ((m, n, k) = (16, 16, 16), (32, 8, 16) or (8, 32, 16); AutoTVM's order
/// of the three by the shape's divisibility). tf32 has one fragment tile, 16 x 16 x 8, and no
/// wmma_m knob; its offset candidates are {0, 4} (four 4-byte elements shift a row by four
/// banks, which is what spreads the fragment loads of eight rows over all 32). After them one
/// knob of ours, `stages` {1, 2, 3} (its first candidate AutoTVM's behaviour, so that AutoTVM's
/// indices stay): 1 stages each step's operands rounded, with synchronous loads; 2 and 3 copy
/// raw float32 tiles with cp.async into a ring of that many buffers, the next steps' copies in
/// flight while the warps multiply the current one, rounding as the fragments are read (rows of
/// [rows, K] operands vec floats a copy; a [K, N] weight's elements and a convolution's patches,
/// gathered with zeros in the padding, one float a copy to their place in the [n][k] tile).
/// 3xtf32 is tf32's space and instructions on raw float32 tiles (stages 1 too), each fragment
/// register split as it is read into big = tf32(x) and small = tf32(x - big), three mma.sync
/// per fragment pair (small * big, big * small, then big * big) into the same accumulators.
///
/// A block computes a (block_row_warps * warp_row_tiles * m) x (block_col_warps *
/// warp_col_tiles * n) output tile of one batch entry (blockIdx.z); per step of chunk * k
/// columns its threads load both operands (vec floats at a time; rows past M or N and columns
/// past K as zeros), round them to the precision into shared memory as [row][k], then each warp
/// runs its tiles' mma.sync over the step. The accumulators are staged through shared memory so
/// that the stores (with the fused epilogue) are coalesced. No shape rule: edges are guarded.
/// Valid when the rows a vector load walks (K, or N for a [K, N] weight) are a multiple of vec,
/// the fragment tile's m is a multiple of 16 (the 8 x 32 form has no m16n8 instruction: its
/// configs are invalid here), a thread holds at most kMaxCudaAccumulators accumulators, and the
/// staged tiles fit the target's shared memory: up to 48 KiB a static array, beyond it dynamic
/// shared memory up to what the target's architecture lets a block opt into (163 KiB on sm_80,
/// 227 KiB on sm_90: limits_for_capability), which deep pipelines of large tiles need.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/template.h"
#include "schedule_space/workload.h"

namespace tensortune::schedule_space {

/// The template objects (registered in template_registry.cc).
const Template& dense_tensorcore_cuda_template();
const Template& batch_matmul_tensorcore_cuda_template();
/// conv2d_nchw_tensorcore.cuda: a convolution as the same product, in the networks' NCHW
/// layout (implicit GEMM): per image, [OC, IC*KH*KW] weights times the [IC*KH*KW, OH*OW] patches
/// of the input, gathered into shared memory as they are staged (zero padding, strides and
/// dilations in the gather), the product [OC, OH*OW] being the NCHW output. Ours: AutoTVM's
/// tensor-core convolution is NHWC (conv2d_nhwc_tensorcore.cuda), a layout our networks do not
/// take; this one runs where conv2d_nchw.cuda runs, with the same knobs as the GEMMs.
const Template& conv2d_nchw_tensorcore_cuda_template();

/// The PTX mma.sync instruction shape a precision's tiles are made of: m16n8k8 for tf32,
/// m16n8k16 for float16 and bfloat16.
struct MmaShape {
  int64_t m = 16, n = 8, k = 8;
};
MmaShape mma_shape(Precision p);

/// The product a tensor-core kernel computes: `batch` entries of [m, k] x [k, n], the weight
/// stored as [n, k] (dense, AutoTVM's batch matmul) or [k, n] (weight_kn); a convolution
/// (`conv` set) is the weight [OC = m, k] times the image's patches [k, n = OH * OW].
struct GemmExtents {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool weight_kn = false;
  Precision precision = Precision::kFloat16;
  std::optional<Conv2dWorkload> conv;
};
GemmExtents gemm_extents(const Workload& w);

struct TensorcoreSchedule {
  Precision precision = Precision::kFloat16;
  int64_t block_row_warps = 1, block_col_warps = 1, warp_row_tiles = 1, warp_col_tiles = 1;
  int64_t chunk = 1, offset = 0, offset_cs = 0, vec = 1;
  int64_t stages = 1;  ///< 1: synchronous rounded staging; 2, 3: a cp.async ring of raw tiles
  int64_t wmma_m = 16, wmma_n = 16, wmma_k = 16;  ///< the fragment tile

  MmaShape mma() const { return mma_shape(precision); }
  int64_t warps() const { return block_row_warps * block_col_warps; }
  int64_t threads() const { return 32 * warps(); }
  int64_t tile_m() const { return block_row_warps * warp_row_tiles * wmma_m; }
  int64_t tile_n() const { return block_col_warps * warp_col_tiles * wmma_n; }
  int64_t tile_k() const { return chunk * wmma_k; }
  int64_t warp_m() const { return warp_row_tiles * wmma_m; }
  int64_t warp_n() const { return warp_col_tiles * wmma_n; }
  /// mma.sync tiles of a warp along M and N.
  int64_t mma_rows() const { return warp_m() / mma().m; }
  int64_t mma_cols() const { return warp_n() / mma().n; }
  int64_t accumulators() const { return 4 * mma_rows() * mma_cols(); }
  bool pipelined() const { return stages > 1; }
  /// Bytes of one staged operand element: a TF32 bit pattern, a float16 / bfloat16, or (a
  /// pipeline's raw copies) a float32.
  int64_t element_bytes() const { return pipelined() || uses_tf32_mma(precision) ? 4 : 2; }
  /// Staged rows, in elements. A pipeline's float rows are padded by 4 floats when `offset` asks
  /// for padding (four banks: the fragment loads of eight rows then hit all 32).
  int64_t row_stride() const { return tile_k() + (pipelined() ? (offset > 0 ? 4 : 0) : offset); }
  int64_t output_row_stride() const { return tile_n() + offset_cs; }  ///< staged output, floats
  int64_t operand_bytes() const {
    return stages * element_bytes() * row_stride() * (tile_m() + tile_n());
  }
  int64_t output_bytes() const { return 4 * tile_m() * output_row_stride(); }
  /// The operands' and the output's staging share one buffer (the output's after the last step),
  /// of float4s (16-byte aligned for the fragment loads).
  int64_t shared_bytes() const {
    const int64_t bytes = operand_bytes() > output_bytes() ? operand_bytes() : output_bytes();
    return (bytes + 15) / 16 * 16;
  }
  /// Beyond the 48 KiB of a static array: the kernel's buffer is dynamic (extern __shared__,
  /// sized at launch, the function opted into it).
  bool dynamic_shared() const {
    return shared_bytes() > kUniversalGpuLimits.max_shared_bytes_per_block;
  }
  /// Blocks of the launch: N tiles, M tiles, batch entries.
  std::array<int64_t, 3> grid(const GemmExtents& e) const {
    return {(e.n + tile_n() - 1) / tile_n(), (e.m + tile_m() - 1) / tile_m(), e.batch};
  }
};

/// The space of a template for the extents (its name, AutoTVM's knobs), valid within the
/// target's limits (limits_for_capability of its architecture).
ConfigSpace tensorcore_space(const std::string& template_name, const GemmExtents& e,
                             const GpuLimits& limits);
TensorcoreSchedule tensorcore_schedule(const GemmExtents& e, const ConfigSpace& space,
                                       const Config& c);

}  // namespace tensortune::schedule_space
