// dense_tensorcore.cuda and batch_matmul_tensorcore.cuda
// (schedule_space/tensorcore_gemm_template.h) in CUDA C with PTX mma.sync. The fragment loads
// follow the PTX ISA's fragment layouts (g = lane / 4, t = lane % 4), which the CPU emulation
// models (emulation_prelude.cc).
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
__device__ __forceinline__ unsigned tt_to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ unsigned short tt_to_f16(float x) {
  unsigned short r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ unsigned short tt_to_bf16(float x) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ void tt_mma_m16n8k8_tf32(float* d, const unsigned* a, const unsigned* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void tt_mma_m16n8k16_f16(float* d, const unsigned* a, const unsigned* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void tt_mma_m16n8k16_bf16(float* d, const unsigned* a, const unsigned* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
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

// The patches of a convolution's image as the [K, N] operand (k = (ic, kh, kw), n = (oh, ow)),
// gathered one element at a time (zeros in the padding and past the edges), stored as [n][k]:
// consecutive threads take consecutive output columns, so their reads are a strided row.
void stage_patches(SourceWriter& src, const ss::TensorcoreSchedule& s, const char* tile,
                   const std::string& base, const ss::Conv2dWorkload& c, int64_t N, int64_t K,
                   const PrecisionCode& code) {
  const int64_t taps = c.kernel_h * c.kernel_w, ow = c.out_width();
  src.open("for (int i = tid; i < " + num(s.tile_k() * s.tile_n()) + "; i += " + num(s.threads()) +
           ") {");
  src.line("const int r = i / " + num(s.tile_n()) + ", c = i % " + num(s.tile_n()) +
           ";  // k, n in the tile");
  src.line("const int kk = k0 + r, p = n0 + c;");
  src.line("float v = 0.0f;");
  src.open("if (kk < " + num(K) + " && p < " + num(N) + ") {");
  src.line("const int ic = kk / " + num(taps) + ", kh = kk % " + num(taps) + " / " +
           num(c.kernel_w) + ", kw = kk % " + num(c.kernel_w) + ";");
  src.line("const int ih = p / " + num(ow) + " * " + num(c.stride_h) + " + kh * " +
           num(c.dilation_h) + " - " + num(c.pad_top) + ";");
  src.line("const int iw = p % " + num(ow) + " * " + num(c.stride_w) + " + kw * " +
           num(c.dilation_w) + " - " + num(c.pad_left) + ";");
  src.line("if (ih >= 0 && ih < " + num(c.in_height) + " && iw >= 0 && iw < " + num(c.in_width) +
           ") v = " + base + "[(ic * " + num(c.in_height) + " + ih) * " + num(c.in_width) +
           " + iw];");
  src.close();
  src.line(std::string(tile) + "[c * " + num(s.row_stride()) + " + r] = " + code.convert + "(v);");
  src.close();
}

CudaKernelSource emit_tensorcore_gemm(const ss::Task& task, const ss::ConfigSpace& space,
                                      const ss::Config& config, const CudaKernelOptions& options,
                                      const std::string& default_entry) {
  const ss::GemmExtents e = ss::gemm_extents(task.workload);
  const ss::TensorcoreSchedule s = ss::tensorcore_schedule(e, space, config);
  const int64_t M = e.m, N = e.n, K = e.k;
  const int64_t tm = s.tile_m(), tn = s.tile_n(), tk = s.tile_k();
  const ss::MmaShape mma = s.mma();
  const PrecisionCode code = code_of(s.precision);
  const bool tf32 = s.precision == ss::Precision::kTf32;
  const int64_t ld = s.row_stride();  // staged elements per row of both operands

  CudaKernelSource k;
  k.entry = options.entry.empty() ? default_entry : options.entry;
  const auto grid = s.grid(e);
  k.grid = {grid[0], grid[1], grid[2]};
  k.block = {s.threads(), 1, 1};
  k.shared_bytes = s.shared_bytes();
  k.signature = ss::template_of(task).signature(task, space, config);

  SourceWriter src;
  src.line(kTensorcoreHelpers);
  open_kernel(src, task, space, config, k, s.threads(), options,
              std::string(" ") + ss::precision_name(s.precision), /*min_blocks_per_sm=*/1);
  src.line("__shared__ float4 smem[" + num(s.shared_bytes() / 16) + "];");
  src.line(std::string(code.element) + "* const a_tile = reinterpret_cast<" + code.element +
           "*>(smem);  // [m][k]");
  src.line(std::string(code.element) + "* const b_tile = a_tile + " + num(tm * ld) +
           ";  // [n][k]");
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
  src.line("#pragma unroll");
  src.open("for (int kk = 0; kk < " + num(tk) + "; kk += " + num(mma.k) + ") {");
  src.line("unsigned a[" + num(s.mma_rows()) + "][4], w[" + num(s.mma_cols()) + "][2];");
  src.open_for("i", s.mma_rows(), "#pragma unroll");
  src.line("const int r = wm + i * 16 + g;");
  if (tf32) {
    // a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4).
    src.line("a[i][0] = a_tile[r * " + num(ld) + " + kk + t];");
    src.line("a[i][1] = a_tile[(r + 8) * " + num(ld) + " + kk + t];");
    src.line("a[i][2] = a_tile[r * " + num(ld) + " + kk + t + 4];");
    src.line("a[i][3] = a_tile[(r + 8) * " + num(ld) + " + kk + t + 4];");
  } else {
    // Register r holds two consecutive k: (g, 2t..), (g + 8, 2t..), (g, 2t + 8..), (g + 8, ..).
    src.line("const unsigned* r0 = reinterpret_cast<const unsigned*>(a_tile + r * " + num(ld) +
             " + kk + 2 * t);");
    src.line("const unsigned* r8 = reinterpret_cast<const unsigned*>(a_tile + (r + 8) * " +
             num(ld) + " + kk + 2 * t);");
    src.line("a[i][0] = r0[0], a[i][1] = r8[0], a[i][2] = r0[4], a[i][3] = r8[4];");
  }
  src.close();
  src.open_for("j", s.mma_cols(), "#pragma unroll");
  src.line("const int c = wn + j * 8 + g;");
  if (tf32) {
    // b0 (k = t, n = g), b1 (k = t + 4, n = g).
    src.line("w[j][0] = b_tile[c * " + num(ld) + " + kk + t];");
    src.line("w[j][1] = b_tile[c * " + num(ld) + " + kk + t + 4];");
  } else {
    src.line("const unsigned* c0 = reinterpret_cast<const unsigned*>(b_tile + c * " + num(ld) +
             " + kk + 2 * t);");
    src.line("w[j][0] = c0[0], w[j][1] = c0[4];");
  }
  src.close();
  src.open_for("i", s.mma_rows(), "#pragma unroll");
  src.open_for("j", s.mma_cols(), "#pragma unroll");
  src.line(std::string(code.mma) + "(acc[i][j], a[i], w[j]);");
  src.close().close();
  src.close();  // kk
  src.close();  // k0

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
