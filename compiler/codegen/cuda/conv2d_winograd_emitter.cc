// conv2d_nchw_winograd.cuda: the fused Winograd convolution of
// schedule_space/conv2d_winograd_cuda_template.h in CUDA C. The transforms are unrolled into
// straight-line code with the matrices' entries as constants (zeros skipped, ones as adds).
#include <cmath>
#include <vector>

#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"
#include "schedule_space/conv2d_winograd_cuda_template.h"
#include "schedule_space/winograd_transform.h"

namespace tensortune::codegen::cuda {
namespace {

namespace ss = schedule_space;

/// "c0 * t0 + c1 * t1 ..." over the non-zero coefficients ("0.0f" when all are zero).
std::string combination(const std::vector<double>& coefficients,
                        const std::vector<std::string>& terms) {
  std::string out;
  for (size_t i = 0; i < coefficients.size(); ++i) {
    const double c = coefficients[i];
    if (std::fabs(c) < 1e-12) continue;
    const bool negative = c < 0;
    const double magnitude = std::fabs(c);
    std::string term = std::fabs(magnitude - 1.0) < 1e-12
                           ? terms[i]
                           : float_literal(static_cast<float>(magnitude)) + " * " + terms[i];
    if (out.empty())
      out = negative ? "-" + term : term;
    else
      out += (negative ? " - " : " + ") + term;
  }
  return out.empty() ? "0.0f" : out;
}

std::string name(const std::string& base, int i, int j) {
  return base + std::to_string(i) + "_" + std::to_string(j);
}

}  // namespace

CudaKernelSource emit_conv2d_nchw_winograd(const ss::Task& task, const ss::ConfigSpace& space,
                                           const ss::Config& config,
                                           const CudaKernelOptions& options) {
  const auto& w = std::get<ss::Conv2dWorkload>(task.workload);
  const ss::WinogradCudaSchedule s = ss::conv2d_nchw_winograd_cuda_schedule(w, space, config);
  const ss::WinogradMatrices& t = ss::winograd_matrices(s.m);
  const int m = s.m, alpha = s.alpha();
  const int64_t points = s.points();
  const int64_t CI = w.in_channels, CO = w.out_channels, H = w.in_height, W = w.in_width;
  const int64_t OH = w.out_height(), OW = w.out_width();
  const int64_t tile_co = s.tile_co(), tile_p = s.tile_p(), R = s.outputs_per_thread();
  const std::string pragma_tile = "#pragma unroll";
  const std::string pragma_chunk =
      unroll_pragma(s.chunk * points, s.auto_unroll_max_step, s.unroll_explicit);
  // The thread's outputs: register index r, local output channel and local tile.
  const std::string r_index =
      "((vy * " + num(s.y[3]) + " + yi) * " + num(s.x[1]) + " + vx) * " + num(s.x[3]) + " + xi";
  const std::string local_co = "(vy * " + num(s.y[2]) + " + ty) * " + num(s.y[3]) + " + yi";
  const std::string local_p = "(vx * " + num(s.x[2]) + " + tx) * " + num(s.x[3]) + " + xi";

  CudaKernelSource k;
  k.entry = options.entry.empty() ? "tt_conv2d_nchw_winograd" : options.entry;
  k.grid = {s.x[0], s.y[0], 1};
  k.block = {s.x[2], s.y[2], 1};
  k.shared_bytes = s.shared_bytes();
  k.signature = ss::template_of(task).signature(task, space, config);

  SourceWriter src;
  open_kernel(
      src, task, space, config, k, s.threads(), options,
      ": F(" + num(m) + "x" + num(m) + ", 3x3), " + num(s.chunk) + " input channels per step");
  src.line("__shared__ float v_tile[" + num(s.chunk * points * tile_p) + "];");
  src.line("__shared__ float u_tile[" + num(s.chunk * points * tile_co) + "];");
  src.line("const int ty = threadIdx.y, tx = threadIdx.x;");
  src.line("const int tid = ty * " + num(s.x[2]) + " + tx;");
  src.line("const int co0 = blockIdx.y * " + num(tile_co) + ";");
  src.line("const int p0 = blockIdx.x * " + num(tile_p) + ";");
  src.line("float acc[" + num(points * R) + "];");
  src.line(pragma_tile);
  src.line("for (int i = 0; i < " + num(points * R) + "; ++i) acc[i] = 0.0f;");
  src.open("for (int ci0 = 0; ci0 < " + num(CI) + "; ci0 += " + num(s.chunk) + ") {");
  src.line("__syncthreads();  // the previous step's tiles are consumed");
  // The input transform: one (channel, tile) pair per iteration, V = B^T d B.
  src.open("for (int i = tid; i < " + num(s.chunk * tile_p) + "; i += " + num(s.threads()) + ") {");
  src.line("const int c = i / " + num(tile_p) + ", pl = i % " + num(tile_p) + ";");
  src.line("const int p = p0 + pl;");
  src.line("const int n = p / " + num(s.tiles_h * s.tiles_w) + ";");
  src.line("const int iy0 = (p / " + num(s.tiles_w) + " % " + num(s.tiles_h) + ") * " + num(m) +
           " - " + num(w.pad_top) + ";");
  src.line("const int ix0 = (p % " + num(s.tiles_w) + ") * " + num(m) + " - " + num(w.pad_left) +
           ";");
  src.line("const float* src = data + (n * " + num(CI) + " + ci0 + c) * " + num(H * W) + ";");
  for (int r = 0; r < alpha; ++r)
    for (int q = 0; q < alpha; ++q)
      src.line("const float " + name("d", r, q) + " = (iy0 + " + num(r) + " >= 0 && iy0 + " +
               num(r) + " < " + num(H) + " && ix0 + " + num(q) + " >= 0 && ix0 + " + num(q) +
               " < " + num(W) + ") ? src[(iy0 + " + num(r) + ") * " + num(W) + " + ix0 + " +
               num(q) + "] : 0.0f;");
  for (int i = 0; i < alpha; ++i)
    for (int l = 0; l < alpha; ++l) {
      std::vector<double> coefficients;
      std::vector<std::string> terms;
      for (int kk = 0; kk < alpha; ++kk) {
        coefficients.push_back(t.bt[i * alpha + kk]);
        terms.push_back(name("d", kk, l));
      }
      src.line("const float " + name("t", i, l) + " = " + combination(coefficients, terms) + ";");
    }
  for (int i = 0; i < alpha; ++i)
    for (int j = 0; j < alpha; ++j) {
      std::vector<double> coefficients;
      std::vector<std::string> terms;
      for (int l = 0; l < alpha; ++l) {
        coefficients.push_back(t.bt[j * alpha + l]);
        terms.push_back(name("t", i, l));
      }
      src.line("v_tile[(c * " + num(points) + " + " + num(i * alpha + j) + ") * " + num(tile_p) +
               " + pl] = " + combination(coefficients, terms) + ";");
    }
  src.close();
  // U of the step's channels for the block's output channels (coalesced along CO).
  src.open("for (int i = tid; i < " + num(s.chunk * points * tile_co) +
           "; i += " + num(s.threads()) + ") {");
  src.line("const int c = i / " + num(points * tile_co) + ", b = i / " + num(tile_co) + " % " +
           num(points) + ", col = i % " + num(tile_co) + ";");
  src.line("u_tile[i] = weight[(b * " + num(CI) + " + ci0 + c) * " + num(CO) + " + co0 + col];");
  src.close();
  src.line("__syncthreads();");
  // The batched GEMM: every point's products, in registers.
  src.open_for("c", s.chunk, pragma_chunk);
  src.open_for("b", points, pragma_tile);
  src.open_for("vy", s.y[1], pragma_tile).open_for("yi", s.y[3], pragma_tile);
  src.line("const float u = u_tile[(c * " + num(points) + " + b) * " + num(tile_co) + " + " +
           local_co + "];");
  src.open_for("vx", s.x[1], pragma_tile).open_for("xi", s.x[3], pragma_tile);
  src.line("acc[b * " + num(R) + " + " + r_index + "] += u * v_tile[(c * " + num(points) +
           " + b) * " + num(tile_p) + " + " + local_p + "];");
  src.close().close().close().close();  // xi vx yi vy
  src.close().close();                  // b c
  src.close();                          // ci0
  // The output transform, Y = A^T M A, and the outputs inside the image.
  src.open_for("vy", s.y[1], pragma_tile).open_for("yi", s.y[3], pragma_tile);
  src.line("const int co = co0 + " + local_co + ";");
  src.open_for("vx", s.x[1], pragma_tile).open_for("xi", s.x[3], pragma_tile);
  src.line("const int p = p0 + " + local_p + ";");
  src.line("const int n = p / " + num(s.tiles_h * s.tiles_w) + ";");
  src.line("const int oy0 = (p / " + num(s.tiles_w) + " % " + num(s.tiles_h) + ") * " + num(m) +
           ";");
  src.line("const int ox0 = (p % " + num(s.tiles_w) + ") * " + num(m) + ";");
  for (int i = 0; i < m; ++i)
    for (int l = 0; l < alpha; ++l) {
      std::vector<double> coefficients;
      std::vector<std::string> terms;
      for (int kk = 0; kk < alpha; ++kk) {
        coefficients.push_back(t.at[i * alpha + kk]);
        terms.push_back("acc[" + num(kk * alpha + l) + " * " + num(R) + " + " + r_index + "]");
      }
      src.line("const float " + name("s", i, l) + " = " + combination(coefficients, terms) + ";");
    }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      std::vector<double> coefficients;
      std::vector<std::string> terms;
      for (int l = 0; l < alpha; ++l) {
        coefficients.push_back(t.at[j * alpha + l]);
        terms.push_back(name("s", i, l));
      }
      src.open("if (oy0 + " + num(i) + " < " + num(OH) + " && ox0 + " + num(j) + " < " + num(OW) +
               ") {");
      src.line("const int o = ((n * " + num(CO) + " + co) * " + num(OH) + " + oy0 + " + num(i) +
               ") * " + num(OW) + " + ox0 + " + num(j) + ";");
      src.line("out[o] = " +
               epilogue("(" + combination(coefficients, terms) + ")", "co", "o", options) + ";");
      src.close();
    }
  src.close().close().close().close();  // xi vx yi vy
  src.close();                          // kernel
  k.source = src.text();
  return k;
}

}  // namespace tensortune::codegen::cuda
