// Implements the row kernels of network_kernels.h: softmax over the last axis and layer
// normalisation, one block per row. Both compute as the interpreter does (the max in float,
// exponentials, sums and the normalisation in double), so that a CUDA network's attention and
// norms stay on the device and agree with the CPU to float rounding.
#include <algorithm>
#include <cstdio>
#include <limits>

#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/network_kernels.h"
#include "compiler/codegen/cuda/source_writer.h"

namespace tensortune::codegen::cuda {
namespace {

/// Threads per row: a power of two, at least a warp, at most kNetworkKernelThreads, no more
/// than the row needs.
int64_t row_threads(int64_t len) {
  int64_t t = 32;
  while (t < kNetworkKernelThreads && t < len) t *= 2;
  return t;
}

/// The kernel's head: one block of `threads` per row, `red` the block's reduction buffer, `base`
/// the row's first element.
CudaKernelSource open_row_kernel(SourceWriter& src, const std::string& entry,
                                 const std::string& params, int64_t rows, int64_t len,
                                 int64_t threads) {
  CudaKernelSource k;
  k.entry = entry;
  k.grid = {std::max<int64_t>(rows, 1), 1, 1};
  k.block = {threads, 1, 1};
  k.shared_bytes = 8 * threads;
  src.open("extern \"C\" __global__ void __launch_bounds__(" + num(threads) + ") " + entry +
           params + " {");
  src.line("__shared__ double red[" + num(threads) + "];");
  src.line("const int t = threadIdx.x;");
  src.line("const long long base = (long long)blockIdx.x * " + num(len) + "LL;");
  return k;
}

/// `for` over this thread's elements of the row: j = t, t + threads, ...
void open_row_loop(SourceWriter& src, int64_t len, int64_t threads) {
  src.open("for (long long j = t; j < " + num(len) + "LL; j += " + num(threads) + ") {");
}

/// Reduces `value` (a double) over the block with `combine(a, b)`, a C expression of red[t]
/// and red[t + s]; every thread then reads the result as `name`.
void reduce_block(SourceWriter& src, const std::string& value, const std::string& combine,
                  const std::string& name, int64_t threads) {
  src.line("red[t] = " + value + ";");
  src.line("__syncthreads();");
  src.open("for (int s = " + num(threads / 2) + "; s > 0; s >>= 1) {");
  src.line("if (t < s) red[t] = " + combine + ";");
  src.line("__syncthreads();");
  src.close();
  src.line("const double " + name + " = red[0];");
  src.line("__syncthreads();  // red is reused");
}

}  // namespace

CudaKernelSource emit_softmax_kernel(const SoftmaxKernelSpec& spec, const std::string& entry) {
  const int64_t len = spec.len, threads = row_threads(len);
  SourceWriter src;
  src.line("// softmax over " + num(spec.rows) + " rows of " + num(len));
  CudaKernelSource k =
      open_row_kernel(src, entry, "(float* __restrict__ out, const float* __restrict__ in)",
                      spec.rows, len, threads);
  // The max as the interpreter takes it: (m < v) ? v : m from -inf, in float.
  src.line("float m = " + float_literal(-std::numeric_limits<float>::infinity()) + ";");
  open_row_loop(src, len, threads);
  src.line("const float v = in[base + j];");
  src.line("m = m < v ? v : m;");
  src.close();
  reduce_block(src, "m", "red[t] < red[t + s] ? red[t + s] : red[t]", "top", threads);
  src.line("double sum = 0.0;");
  open_row_loop(src, len, threads);
  src.line("sum += exp((double)in[base + j] - top);");
  src.close();
  reduce_block(src, "sum", "red[t] + red[t + s]", "total", threads);
  open_row_loop(src, len, threads);
  src.line("out[base + j] = (float)(exp((double)in[base + j] - top) / total);");
  src.close();
  src.close();
  k.source = src.text();
  k.arg_count = 2;
  return k;
}

CudaKernelSource emit_layer_norm_kernel(const LayerNormKernelSpec& spec, const std::string& entry) {
  const int64_t len = spec.len, threads = row_threads(len);
  SourceWriter src;
  src.line("// layer norm over " + num(spec.rows) + " rows of " + num(len));
  std::string params =
      "(float* __restrict__ out, const float* __restrict__ in, const float* __restrict__ scale";
  params += spec.has_bias ? ", const float* __restrict__ bias)" : ")";
  CudaKernelSource k = open_row_kernel(src, entry, params, spec.rows, len, threads);
  src.line("double sum = 0.0;");
  open_row_loop(src, len, threads);
  src.line("sum += (double)in[base + j];");
  src.close();
  reduce_block(src, "sum", "red[t] + red[t + s]", "total", threads);
  src.line("const double mean = total / " + num(len) + ".0;");
  src.line("double squares = 0.0;");
  open_row_loop(src, len, threads);
  src.line("const double d = (double)in[base + j] - mean;");
  src.line("squares += d * d;");
  src.close();
  reduce_block(src, "squares", "red[t] + red[t + s]", "deviation", threads);
  char eps[40];
  std::snprintf(eps, sizeof eps, "%.17g", spec.epsilon);
  src.line("const double inv = 1.0 / sqrt(deviation / " + num(len) + ".0 + " + eps + ");");
  open_row_loop(src, len, threads);
  src.line("double v = ((double)in[base + j] - mean) * inv * (double)scale[j];");
  if (spec.has_bias) src.line("v += (double)bias[j];");
  src.line("out[base + j] = (float)v;");
  src.close();
  src.close();
  k.source = src.text();
  k.arg_count = spec.has_bias ? 4 : 3;
  return k;
}

}  // namespace tensortune::codegen::cuda
