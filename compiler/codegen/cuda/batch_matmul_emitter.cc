// batch_matmul.cuda (schedule_space/batch_matmul_cuda_template.h) in CUDA C.
#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"
#include "schedule_space/batch_matmul_cuda_template.h"

namespace tensortune::codegen::cuda {

namespace ss = schedule_space;

CudaKernelSource emit_batch_matmul(const ss::Task& task, const ss::ConfigSpace& space,
                                   const ss::Config& config, const CudaKernelOptions& options) {
  const auto& w = std::get<ss::BatchMatmulWorkload>(task.workload);
  const ss::BatchMatmulCudaSchedule s = ss::batch_matmul_cuda_schedule(w, space, config);
  const int64_t M = w.m, N = w.n, K = w.k;
  const int64_t tm = s.tile_m(), tn = s.tile_n(), tk = s.k[1], yi = s.y[2], xi = s.x[2];
  const std::string unroll = "#pragma unroll";

  CudaKernelSource k;
  k.entry = options.entry.empty() ? "tt_batch_matmul" : options.entry;
  k.grid = {s.x[0], s.y[0], w.batch};
  k.block = {s.x[1], s.y[1], 1};
  k.shared_bytes = s.shared_bytes();
  k.signature = ss::template_of(task).signature(task, space, config);

  SourceWriter src;
  open_kernel(src, task, space, config, k, s.threads(), options);
  src.line("__shared__ float a_tile[" + num(tk * tm) + "];  // [k][m]");
  src.line("__shared__ float b_tile[" + num(tk * tn) + "];  // [k][n]");
  src.line("const int tx = threadIdx.x, ty = threadIdx.y;  // n and m threads");
  src.line("const int tid = ty * " + num(s.x[1]) + " + tx;");
  src.line("const int b = blockIdx.z, m0 = blockIdx.y * " + num(tm) + ", n0 = blockIdx.x * " +
           num(tn) + ";");
  src.line("const float* a = data + (long)b * " + num(M * K) + ";");
  src.line("const float* w = weight + (long)b * " + num(N * K) + ";");
  src.line("float acc[" + num(s.accumulators()) + "];");
  src.line(unroll);
  src.line("for (int i = 0; i < " + num(s.accumulators()) + "; ++i) acc[i] = 0.0f;");
  src.open_for("ko", s.k[0]);
  src.line("__syncthreads();  // the previous step's tiles are consumed");
  // Consecutive threads read consecutive addresses: k along x's rows, and along w's rows k
  // (transpose_b) or n.
  src.open("for (int i = tid; i < " + num(tm * tk) + "; i += " + num(s.threads()) + ") {");
  src.line("a_tile[(i % " + num(tk) + ") * " + num(tm) + " + i / " + num(tk) + "] = a[(m0 + i / " +
           num(tk) + ") * " + num(K) + " + ko * " + num(tk) + " + i % " + num(tk) + "];");
  src.close();
  src.open("for (int i = tid; i < " + num(tn * tk) + "; i += " + num(s.threads()) + ") {");
  if (w.transpose_b) {
    src.line("b_tile[(i % " + num(tk) + ") * " + num(tn) + " + i / " + num(tk) +
             "] = w[(n0 + i / " + num(tk) + ") * " + num(K) + " + ko * " + num(tk) + " + i % " +
             num(tk) + "];");
  } else {
    src.line("b_tile[i] = w[(ko * " + num(tk) + " + i / " + num(tn) + ") * " + num(N) +
             " + n0 + i % " + num(tn) + "];");
  }
  src.close();
  src.line("__syncthreads();");
  src.open_for("kk", tk,
               unroll_pragma(tk * s.accumulators(), s.auto_unroll_max_step, s.unroll_explicit));
  src.open_for("i", yi, unroll);
  src.line("const float av = a_tile[kk * " + num(tm) + " + ty * " + num(yi) + " + i];");
  src.open_for("j", xi, unroll);
  src.line("acc[i * " + num(xi) + " + j] += av * b_tile[kk * " + num(tn) + " + tx * " + num(xi) +
           " + j];");
  src.close().close().close();  // j i kk
  src.close();                  // ko
  src.open_for("i", yi, unroll).open_for("j", xi, unroll);
  src.line("const int m = m0 + ty * " + num(yi) + " + i, n = n0 + tx * " + num(xi) + " + j;");
  src.line("const long at = (long)b * " + num(M * N) + " + m * " + num(N) + " + n;");
  src.line("out[at] = " + epilogue("acc[i * " + num(xi) + " + j]", "n", "at", options) + ";");
  src.close().close();
  src.close();
  k.source = src.text();
  return k;
}

}  // namespace tensortune::codegen::cuda
