// dense_tensorcore.cuda and batch_matmul_tensorcore.cuda
// (schedule_space/tensorcore_gemm_template.h) in CUDA C with PTX mma.sync. The fragment loads
// follow the PTX ISA's fragment layouts (g = lane / 4, t = lane % 4), which the CPU emulation
// models (emulation_prelude.cc).
#include <algorithm>

#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"
#include "schedule_space/tensorcore_gemm_template.h"

namespace tensortune::codegen::cuda {

namespace ss = schedule_space;

namespace {

// The GPU forms of the tensor-core helpers (the emulation prelude defines the CPU forms);
// guarded so that a network's kernels can share one compilation.
constexpr char kTensorcoreHelpers[] =
    R"(#if defined(__CUDA_ARCH__) && !defined(TT_TENSORCORE_HELPERS)
#define TT_TENSORCORE_HELPERS
// The block's buffer beyond a static array's 48 KiB, sized at launch.
#define TT_DYNAMIC_SHARED(type, name, count) extern __shared__ type name[]
__device__ __forceinline__ unsigned tt_to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
#define TT_CVT_16(name, type)                                        \
  __device__ __forceinline__ unsigned short name(float x) {           \
    unsigned short r;                                                  \
    asm("cvt.rn." type ".f32 %0, %1;" : "=h"(r) : "f"(x));             \
    return r;                                                          \
  }
TT_CVT_16(tt_to_f16, "f16")
TT_CVT_16(tt_to_bf16, "bf16")
// D = A B + D for one mma.sync of the shape and input type, float32 accumulators.
#define TT_MMA(name, shape, type)                                                            \
  __device__ __forceinline__ void name(float* d, const unsigned* a, const unsigned* b) {     \
    asm volatile("mma.sync.aligned." shape ".row.col.f32." type "." type                     \
                 ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"       \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                            \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));        \
  }
TT_MMA(tt_mma_m16n8k8_tf32, "m16n8k8", "tf32")
TT_MMA(tt_mma_m16n8k16_f16, "m16n8k16", "f16")
TT_MMA(tt_mma_m16n8k16_bf16, "m16n8k16", "bf16")
__device__ __forceinline__ unsigned tt_shared_address(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
template <int Bytes>
__device__ __forceinline__ void tt_cp_async(void* dst, const void* src, int valid) {
  if (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(tt_shared_address(dst)), "l"(src), "r"(valid));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;"
                 :: "r"(tt_shared_address(dst)), "l"(src), "n"(Bytes), "r"(valid));
}
__device__ __forceinline__ void tt_cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void tt_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(N));
}
#endif
#ifndef TT_TENSORCORE_PACK
#define TT_TENSORCORE_PACK
// Two floats rounded to 16 bits and packed as a fragment register holds them (low half first).
__device__ __forceinline__ unsigned tt_pack_f16(float2 v) {
  return unsigned(tt_to_f16(v.x)) | (unsigned(tt_to_f16(v.y)) << 16);
}
__device__ __forceinline__ unsigned tt_pack_bf16(float2 v) {
  return unsigned(tt_to_bf16(v.x)) | (unsigned(tt_to_bf16(v.y)) << 16);
}
// 3xTF32: x as big + small, both TF32 (x - big is exact in float32). A non-finite x keeps its
// value in big (small 0), so that infinities stay infinite instead of becoming inf - inf.
__device__ __forceinline__ void tt_split_tf32(float x, unsigned& big, unsigned& small) {
  big = tt_to_tf32(x);
  const float rest = x - __uint_as_float(big);
  small = tt_to_tf32(rest == rest ? rest : 0.0f);
}
#endif
)";

struct PrecisionCode {
  const char* element;  // the staged element's type
  const char* convert;  // float -> staged element
  const char* mma;      // the helper of the instruction
};

PrecisionCode code_of(ss::Precision p) {
  switch (p) {
    case ss::Precision::kTf32:
      return {"unsigned", "tt_to_tf32", "tt_mma_m16n8k8_tf32"};
    case ss::Precision::k3xTf32:  // raw floats, split as the fragments are read
      return {"float", "", "tt_mma_m16n8k8_tf32"};
    case ss::Precision::kBFloat16:
      return {"unsigned short", "tt_to_bf16", "tt_mma_m16n8k16_bf16"};
    default:
      return {"unsigned short", "tt_to_f16", "tt_mma_m16n8k16_f16"};
  }
}

// Stages a (rows x tile_k) block of a row-major [extent, K] operand at `base` (this batch
// entry's), rounded, as [row][k], with zeros past the extent and past K (K is a multiple of vec,
// so a vector is wholly inside or outside).
void load_vector(SourceWriter& src, const std::string& at, int64_t vec) {
  if (vec >= 4) {
    src.open_for("q", vec / 4, "#pragma unroll");
    src.line("const float4 x = reinterpret_cast<const float4*>(" + at + ")[q];");
    src.line("v[4 * q] = x.x, v[4 * q + 1] = x.y, v[4 * q + 2] = x.z, v[4 * q + 3] = x.w;");
    src.close();
  } else if (vec == 2) {
    src.line("const float2 x = *reinterpret_cast<const float2*>(" + at + ");");
    src.line("v[0] = x.x, v[1] = x.y;");
  } else {
    src.line("v[0] = (" + at + ")[0];");
  }
}

void zero_vector(SourceWriter& src, int64_t vec) {
  src.open("else {");
  src.line("#pragma unroll");
  src.line("for (int j = 0; j < " + num(vec) + "; ++j) v[j] = 0.0f;");
  src.close();
}

void stage_rows(SourceWriter& src, const ss::TensorcoreSchedule& s, const char* tile,
                const std::string& base, const char* origin, int64_t rows, int64_t extent,
                int64_t K, const PrecisionCode& code) {
  const int64_t per_row = s.tile_k() / s.vec;
  src.open("for (int i = tid; i < " + num(rows * per_row) + "; i += " + num(s.threads()) + ") {");
  src.line("const int r = i / " + num(per_row) + ", c = i % " + num(per_row) + " * " + num(s.vec) +
           ";");
  src.line("const int row = " + std::string(origin) + " + r, col = k0 + c;");
  src.line("float v[" + num(s.vec) + "];");
  src.open("if (row < " + num(extent) + " && col < " + num(K) + ") {");
  load_vector(src, base + " + row * " + num(K) + " + col", s.vec);
  src.close();
  zero_vector(src, s.vec);
  src.line("#pragma unroll");
  src.line("for (int j = 0; j < " + num(s.vec) + "; ++j) " + tile + "[r * " + num(s.row_stride()) +
           " + c + j] = " + code.convert + "(v[j]);");
  src.close();
}

// The same for a [K, N] weight: vectors along N, stored transposed as [n][k].
void stage_columns(SourceWriter& src, const ss::TensorcoreSchedule& s, const char* tile,
                   const std::string& base, int64_t N, int64_t K, const PrecisionCode& code) {
  const int64_t per_row = s.tile_n() / s.vec;
  src.open("for (int i = tid; i < " + num(s.tile_k() * per_row) + "; i += " + num(s.threads()) +
           ") {");
  src.line("const int r = i / " + num(per_row) + ", c = i % " + num(per_row) + " * " + num(s.vec) +
           ";  // k, n in the tile");
  src.line("const int kk = k0 + r, col = n0 + c;");
  src.line("float v[" + num(s.vec) + "];");
  src.open("if (kk < " + num(K) + " && col < " + num(N) + ") {");
  load_vector(src, base + " + kk * " + num(N) + " + col", s.vec);
  src.close();
  zero_vector(src, s.vec);
  src.line("#pragma unroll");
  src.line("for (int j = 0; j < " + num(s.vec) + "; ++j) " + tile + "[(c + j) * " +
           num(s.row_stride()) + " + r] = " + code.convert + "(v[j]);");
  src.close();
}

// The image coordinates of patch element (kk, p): ic, kh, kw of the reduction index, and the
// input row and column ih, iw (before the bounds check) of output position p.
void patch_coordinates(SourceWriter& src, const ss::Conv2dWorkload& c) {
  const int64_t taps = c.kernel_h * c.kernel_w, ow = c.out_width();
  src.line("const int ic = kk / " + num(taps) + ", kh = kk % " + num(taps) + " / " +
           num(c.kernel_w) + ", kw = kk % " + num(c.kernel_w) + ";");
  src.line("const int ih = p / " + num(ow) + " * " + num(c.stride_h) + " + kh * " +
           num(c.dilation_h) + " - " + num(c.pad_top) + ";");
  src.line("const int iw = p % " + num(ow) + " * " + num(c.stride_w) + " + kw * " +
           num(c.dilation_w) + " - " + num(c.pad_left) + ";");
}

// The patches of a convolution's image as the [K, N] operand (k = (ic, kh, kw), n = (oh, ow)),
// gathered one element at a time (zeros in the padding and past the edges), stored as [n][k]:
// consecutive threads take consecutive output columns, so their reads are a strided row.
void stage_patches(SourceWriter& src, const ss::TensorcoreSchedule& s, const char* tile,
                   const std::string& base, const ss::Conv2dWorkload& c, int64_t N, int64_t K,
                   const PrecisionCode& code) {
  src.open("for (int i = tid; i < " + num(s.tile_k() * s.tile_n()) + "; i += " + num(s.threads()) +
           ") {");
  src.line("const int r = i / " + num(s.tile_n()) + ", c = i % " + num(s.tile_n()) +
           ";  // k, n in the tile");
  src.line("const int kk = k0 + r, p = n0 + c;");
  src.line("float v = 0.0f;");
  src.open("if (kk < " + num(K) + " && p < " + num(N) + ") {");
  patch_coordinates(src, c);
  src.line("if (ih >= 0 && ih < " + num(c.in_height) + " && iw >= 0 && iw < " + num(c.in_width) +
           ") v = " + base + "[(ic * " + num(c.in_height) + " + ih) * " + num(c.in_width) +
           " + iw];");
  src.close();
  src.line(std::string(tile) + "[c * " + num(s.row_stride()) + " + r] = " + code.convert + "(v);");
  src.close();
}

// 3xtf32's steps: tf32's fragment positions on raw float tiles, each element split into two
// TF32 registers (big, small); per fragment pair the small products first, then big * big, so
// that the large term is added to sums that already hold the corrections.
void emit_split_fragment_steps(SourceWriter& src, const ss::TensorcoreSchedule& s,
                               const std::string& a, const std::string& b) {
  const std::string ld = num(s.row_stride());
  auto at = [&](const std::string& tile, const std::string& row, const std::string& k) {
    return tile + "[(" + row + ") * " + ld + " + " + k + "]";
  };
  src.line("#pragma unroll");
  src.open("for (int kk = 0; kk < " + num(s.tile_k()) + "; kk += " + num(s.mma().k) + ") {");
  src.line("unsigned a[" + num(s.mma_rows()) + "][4], as[" + num(s.mma_rows()) + "][4], w[" +
           num(s.mma_cols()) + "][2], ws[" + num(s.mma_cols()) + "][2];");
  src.open_for("i", s.mma_rows(), "#pragma unroll");
  src.line("const int r = wm + i * 16 + g;");
  // a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4), as tf32's.
  src.line("tt_split_tf32(" + at(a, "r", "kk + t") + ", a[i][0], as[i][0]);");
  src.line("tt_split_tf32(" + at(a, "r + 8", "kk + t") + ", a[i][1], as[i][1]);");
  src.line("tt_split_tf32(" + at(a, "r", "kk + t + 4") + ", a[i][2], as[i][2]);");
  src.line("tt_split_tf32(" + at(a, "r + 8", "kk + t + 4") + ", a[i][3], as[i][3]);");
  src.close();
  src.open_for("j", s.mma_cols(), "#pragma unroll");
  src.line("const int c = wn + j * 8 + g;");
  src.line("tt_split_tf32(" + at(b, "c", "kk + t") + ", w[j][0], ws[j][0]);");
  src.line("tt_split_tf32(" + at(b, "c", "kk + t + 4") + ", w[j][1], ws[j][1]);");
  src.close();
  src.open_for("i", s.mma_rows(), "#pragma unroll");
  src.open_for("j", s.mma_cols(), "#pragma unroll");
  src.line("tt_mma_m16n8k8_tf32(acc[i][j], as[i], w[j]);");
  src.line("tt_mma_m16n8k8_tf32(acc[i][j], a[i], ws[j]);");
  src.line("tt_mma_m16n8k8_tf32(acc[i][j], a[i], w[j]);");
  src.close().close();
  src.close();  // kk
}

// The warps' mma.sync over one staged step: each fragment register read from the staged
// tiles by the PTX ISA's layouts (rows of A and of B's columns, both stored [row][k]). `raw`:
// the tiles hold float32 copies (the cp.async ring), rounded as they are read.
void emit_fragment_steps(SourceWriter& src, const ss::TensorcoreSchedule& s, const std::string& a,
                         const std::string& b, bool raw) {
  const bool tf32 = ss::uses_tf32_mma(s.precision);
  const bool split = s.precision == ss::Precision::k3xTf32;  // its tiles are always raw
  if (split) {
    emit_split_fragment_steps(src, s, a, b);
    return;
  }
  const PrecisionCode code = code_of(s.precision);
  const std::string ld = num(s.row_stride());
  // The register holding elements (row, k) and (row, k + 1) of a tile: two staged 16-bit values,
  // or two floats rounded and packed (low half first).
  auto pair = [&](const std::string& tile, const std::string& row, const std::string& k) {
    const std::string at = tile + " + (" + row + ") * " + ld + " + " + k;
    if (!raw) return "*reinterpret_cast<const unsigned*>(" + at + ")";
    return std::string(code.convert == std::string("tt_to_bf16") ? "tt_pack_bf16" : "tt_pack_f16") +
           "(*reinterpret_cast<const float2*>(" + at + "))";
  };
  auto single = [&](const std::string& tile, const std::string& row, const std::string& k) {
    const std::string v = tile + "[(" + row + ") * " + ld + " + " + k + "]";
    return raw ? "tt_to_tf32(" + v + ")" : v;
  };
  src.line("#pragma unroll");
  src.open("for (int kk = 0; kk < " + num(s.tile_k()) + "; kk += " + num(s.mma().k) + ") {");
  src.line("unsigned a[" + num(s.mma_rows()) + "][4], w[" + num(s.mma_cols()) + "][2];");
  src.open_for("i", s.mma_rows(), "#pragma unroll");
  src.line("const int r = wm + i * 16 + g;");
  if (tf32) {
    // a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4).
    src.line("a[i][0] = " + single(a, "r", "kk + t") + ";");
    src.line("a[i][1] = " + single(a, "r + 8", "kk + t") + ";");
    src.line("a[i][2] = " + single(a, "r", "kk + t + 4") + ";");
    src.line("a[i][3] = " + single(a, "r + 8", "kk + t + 4") + ";");
  } else {
    // Register r holds two consecutive k: (g, 2t..), (g + 8, 2t..), (g, 2t + 8..), (g + 8, ..).
    src.line("a[i][0] = " + pair(a, "r", "kk + 2 * t") + ";");
    src.line("a[i][1] = " + pair(a, "r + 8", "kk + 2 * t") + ";");
    src.line("a[i][2] = " + pair(a, "r", "kk + 2 * t + 8") + ";");
    src.line("a[i][3] = " + pair(a, "r + 8", "kk + 2 * t + 8") + ";");
  }
  src.close();
  src.open_for("j", s.mma_cols(), "#pragma unroll");
  src.line("const int c = wn + j * 8 + g;");
  if (tf32) {
    // b0 (k = t, n = g), b1 (k = t + 4, n = g).
    src.line("w[j][0] = " + single(b, "c", "kk + t") + ";");
    src.line("w[j][1] = " + single(b, "c", "kk + t + 4") + ";");
  } else {
    src.line("w[j][0] = " + pair(b, "c", "kk + 2 * t") + ";");
    src.line("w[j][1] = " + pair(b, "c", "kk + 2 * t + 8") + ";");
  }
  src.close();
  src.open_for("i", s.mma_rows(), "#pragma unroll");
  src.open_for("j", s.mma_cols(), "#pragma unroll");
  src.line(std::string(code.mma) + "(acc[i][j], a[i], w[j]);");
  src.close().close();
  src.close();  // kk
}

// The cp.async copies of one step's tiles into a ring slot: `rows` rows of a row-major
// [extent, K] operand, vec floats a copy (16, 8 or 4 bytes), zeros past the extent and past K.
void issue_copies(SourceWriter& src, const ss::TensorcoreSchedule& s, const std::string& ring,
                  int64_t rows, const std::string& base, const char* origin, int64_t extent,
                  int64_t K) {
  const int64_t per_row = s.tile_k() / s.vec;
  src.open("for (int i = tid; i < " + num(rows * per_row) + "; i += " + num(s.threads()) + ") {");
  src.line("const int r = i / " + num(per_row) + ", c = i % " + num(per_row) + " * " + num(s.vec) +
           ";");
  src.line("const int row = " + std::string(origin) + " + r, col = k0 + c;");
  src.line("const bool inside = row < " + num(extent) + " && col < " + num(K) + ";");
  // At most 16 bytes a copy (cp.async's largest): vec 8 is two. An outside copy reads nothing
  // (valid 0) but still names a mapped address.
  const int64_t chunk = std::min<int64_t>(s.vec, 4), bytes = 4 * chunk;
  for (int64_t q = 0; q < s.vec / chunk; ++q) {
    const std::string at = " + c + " + num(q * chunk);
    src.line("tt_cp_async<" + num(bytes) + ">(" + ring + " + (slot * " + num(rows) + " + r) * " +
             num(s.row_stride()) + at + ", inside ? " + base + " + row * " + num(K) + " + col + " +
             num(q * chunk) + " : " + base + ", inside ? " + num(bytes) + " : 0);");
  }
  src.close();
}

// The cp.async copies of one step's B tile when it is not rows of [N, K]: a [K, N] weight's
// elements or a convolution's patches (gathered: zeros in the padding), one float a copy, each to
// its place of the [n][k] slot.
void issue_column_copies(SourceWriter& src, const ss::TensorcoreSchedule& s,
                         const ss::GemmExtents& e) {
  const int64_t tn = s.tile_n(), ld = s.row_stride();
  src.open("for (int i = tid; i < " + num(s.tile_k() * tn) + "; i += " + num(s.threads()) + ") {");
  src.line("const int r = i / " + num(tn) + ", c = i % " + num(tn) + ";  // k, n in the tile");
  src.line("const int kk = k0 + r, p = n0 + c;");
  std::string at, base;
  if (e.conv) {
    const ss::Conv2dWorkload& c = *e.conv;
    patch_coordinates(src, c);
    src.line("const bool inside = kk < " + num(e.k) + " && p < " + num(e.n) +
             " && ih >= 0 && ih < " + num(c.in_height) + " && iw >= 0 && iw < " + num(c.in_width) +
             ";");
    base = "image";
    at = "image + (ic * " + num(c.in_height) + " + ih) * " + num(c.in_width) + " + iw";
  } else {
    src.line("const bool inside = kk < " + num(e.k) + " && p < " + num(e.n) + ";");
    base = "weight_b";
    at = "weight_b + kk * " + num(e.n) + " + p";
  }
  src.line("tt_cp_async<4>(b_ring + (slot * " + num(tn) + " + c) * " + num(ld) + " + r, inside ? " +
           at + " : " + base + ", inside ? 4 : 0);");
  src.close();
}

// The steps as a ring of `stages` raw tiles: the copies of the next stages - 1 steps in flight
// while the warps multiply the current one (cp.async.wait_group stages - 2, then a barrier, so
// every thread's copies of this step have landed and are visible to all).
void emit_pipelined_steps(SourceWriter& src, const ss::TensorcoreSchedule& s,
                          const ss::GemmExtents& e) {
  const int64_t tm = s.tile_m(), tn = s.tile_n(), tk = s.tile_k();
  const int64_t steps = (e.k + tk - 1) / tk;
  auto issue = [&](const std::string& step) {  // inside the caller's braces
    src.line("const int k0 = (" + step + ") * " + num(tk) + ", slot = (" + step + ") % " +
             num(s.stages) + ";");
    if (e.conv) {
      issue_copies(src, s, "a_ring", tm, "weight", "m0", e.m, e.k);
      issue_column_copies(src, s, e);
    } else {
      issue_copies(src, s, "a_ring", tm, "data_b", "m0", e.m, e.k);
      if (e.weight_kn)
        issue_column_copies(src, s, e);
      else
        issue_copies(src, s, "b_ring", tn, "weight_b", "n0", e.n, e.k);
    }
  };
  src.open_for("p", s.stages - 1, "#pragma unroll");
  src.open("if (p < " + num(steps) + ") {");
  issue("p");
  src.close();
  src.line("tt_cp_async_commit();");
  src.close();
  src.open("for (int step = 0; step < " + num(steps) + "; ++step) {");
  src.line("tt_cp_async_wait<" + num(s.stages - 2) + ">();");
  src.line("__syncthreads();  // this step's copies, every thread's, have landed");
  src.line("const float* const a_step = a_ring + step % " + num(s.stages) + " * " +
           num(tm * s.row_stride()) + ";");
  src.line("const float* const b_step = b_ring + step % " + num(s.stages) + " * " +
           num(tn * s.row_stride()) + ";");
  emit_fragment_steps(src, s, "a_step", "b_step", /*raw=*/true);
  // Into the slot the previous step used: every thread has passed this step's barrier, so no
  // warp still reads it.
  src.open("if (step + " + num(s.stages - 1) + " < " + num(steps) + ") {");
  issue("step + " + num(s.stages - 1));
  src.close();
  src.line("tt_cp_async_commit();");
  src.close();
  src.line("tt_cp_async_wait<0>();  // nothing in flight when the output reuses the memory");
}

CudaKernelSource emit_tensorcore_gemm(const ss::Task& task, const ss::ConfigSpace& space,
                                      const ss::Config& config, const CudaKernelOptions& options,
                                      const std::string& default_entry) {
  const ss::GemmExtents e = ss::gemm_extents(task.workload);
  const ss::TensorcoreSchedule s = ss::tensorcore_schedule(e, space, config);
  const int64_t M = e.m, N = e.n, K = e.k;
  const int64_t tm = s.tile_m(), tn = s.tile_n(), tk = s.tile_k();
  const PrecisionCode code = code_of(s.precision);
  const int64_t ld = s.row_stride();  // staged elements per row of both operands

  CudaKernelSource k;
  k.entry = options.entry.empty() ? default_entry : options.entry;
  const auto grid = s.grid(e);
  k.grid = {grid[0], grid[1], grid[2]};
  k.block = {s.threads(), 1, 1};
  (s.dynamic_shared() ? k.dynamic_shared_bytes : k.shared_bytes) = s.shared_bytes();
  k.signature = ss::template_of(task).signature(task, space, config);

  SourceWriter src;
  src.line(kTensorcoreHelpers);
  open_kernel(src, task, space, config, k, s.threads(), options,
              std::string(" ") + ss::precision_name(s.precision), /*min_blocks_per_sm=*/1);
  if (s.dynamic_shared())
    src.line("TT_DYNAMIC_SHARED(float4, smem, " + num(s.shared_bytes() / 16) + ");");
  else
    src.line("__shared__ float4 smem[" + num(s.shared_bytes() / 16) + "];");
  if (s.pipelined()) {
    src.line("float* const a_ring = reinterpret_cast<float*>(smem);  // [stage][m][k]");
    src.line("float* const b_ring = a_ring + " + num(s.stages * tm * ld) + ";  // [stage][n][k]");
  } else {
    src.line(std::string(code.element) + "* const a_tile = reinterpret_cast<" + code.element +
             "*>(smem);  // [m][k]");
    src.line(std::string(code.element) + "* const b_tile = a_tile + " + num(tm * ld) +
             ";  // [n][k]");
  }
  src.line("const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;");
  src.line("const int g = lane / 4, t = lane % 4;");
  src.line("const int m0 = blockIdx.y * " + num(tm) + ", n0 = blockIdx.x * " + num(tn) +
           ", b = blockIdx.z;");
  if (e.conv) {
    // The weight [OC, K] is the row operand of every image; the image's patches the columns.
    const ss::Conv2dWorkload& c = *e.conv;
    src.line("const float* const image = data + b * " +
             num(c.in_channels * c.in_height * c.in_width) + ";");
  } else {
    src.line("const float* const data_b = data + b * " + num(M * K) + ";  // this batch entry's");
    src.line("const float* const weight_b = weight + b * " + num(N * K) + ";");
  }
  src.line("const int wm = warp / " + num(s.block_col_warps) + " * " + num(s.warp_m()) +
           ", wn = warp % " + num(s.block_col_warps) + " * " + num(s.warp_n()) +
           ";  // the warp's tile in the block's");
  src.line("float acc[" + num(s.mma_rows()) + "][" + num(s.mma_cols()) + "][4];");
  src.open_for("i", s.mma_rows(), "#pragma unroll");
  src.open_for("j", s.mma_cols(), "#pragma unroll");
  src.line("acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;");
  src.close().close();

  if (s.pipelined()) {
    emit_pipelined_steps(src, s, e);
  } else {
    src.open("for (int k0 = 0; k0 < " + num(K) + "; k0 += " + num(tk) + ") {");
    src.line("__syncthreads();  // the previous step's tiles are consumed");
    if (e.conv) {
      stage_rows(src, s, "a_tile", "weight", "m0", tm, M, K, code);
      stage_patches(src, s, "b_tile", "image", *e.conv, N, K, code);
    } else {
      stage_rows(src, s, "a_tile", "data_b", "m0", tm, M, K, code);
      if (e.weight_kn)
        stage_columns(src, s, "b_tile", "weight_b", N, K, code);
      else
        stage_rows(src, s, "b_tile", "weight_b", "n0", tn, N, K, code);
    }
    src.line("__syncthreads();");
    emit_fragment_steps(src, s, "a_tile", "b_tile", /*raw=*/false);
    src.close();  // k0
  }

  // Through shared memory, so that consecutive threads store consecutive columns.
  const int64_t ldc = s.output_row_stride();
  src.line("__syncthreads();");
  src.line("float* const c_tile = reinterpret_cast<float*>(smem);  // [m][n]");
  src.open_for("i", s.mma_rows(), "#pragma unroll");
  src.open_for("j", s.mma_cols(), "#pragma unroll");
  src.line("const int r = wm + i * 16 + g, c = wn + j * 8 + 2 * t;");
  src.line("c_tile[r * " + num(ldc) + " + c] = acc[i][j][0];");
  src.line("c_tile[r * " + num(ldc) + " + c + 1] = acc[i][j][1];");
  src.line("c_tile[(r + 8) * " + num(ldc) + " + c] = acc[i][j][2];");
  src.line("c_tile[(r + 8) * " + num(ldc) + " + c + 1] = acc[i][j][3];");
  src.close().close();
  src.line("__syncthreads();");
  src.open("for (int i = tid; i < " + num(tm * tn) + "; i += " + num(s.threads()) + ") {");
  src.line("const int m = m0 + i / " + num(tn) + ", j = n0 + i % " + num(tn) + ";");
  const std::string index = "(b * " + num(M) + " + m) * " + num(N) + " + j";
  src.line("if (m < " + num(M) + " && j < " + num(N) + ") out[" + index + "] = " +
           epilogue("c_tile[i / " + num(tn) + " * " + num(ldc) + " + i % " + num(tn) + "]",
                    e.conv ? "m" : "j", index, options) +
           ";");
  src.close();
  src.close();  // kernel
  k.source = src.text();
  return k;
}

}  // namespace

CudaKernelSource emit_dense_tensorcore(const ss::Task& task, const ss::ConfigSpace& space,
                                       const ss::Config& config, const CudaKernelOptions& options) {
  return emit_tensorcore_gemm(task, space, config, options, "tt_dense_tensorcore");
}

CudaKernelSource emit_conv2d_nchw_tensorcore(const ss::Task& task, const ss::ConfigSpace& space,
                                             const ss::Config& config,
                                             const CudaKernelOptions& options) {
  return emit_tensorcore_gemm(task, space, config, options, "tt_conv2d_nchw_tensorcore");
}

CudaKernelSource emit_batch_matmul_tensorcore(const ss::Task& task, const ss::ConfigSpace& space,
                                              const ss::Config& config,
                                              const CudaKernelOptions& options) {
  return emit_tensorcore_gemm(task, space, config, options, "tt_batch_matmul_tensorcore");
}

}  // namespace tensortune::codegen::cuda
