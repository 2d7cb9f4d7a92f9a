// dense_small_batch.gpu and dense_large_batch.gpu (schedule_space/dense_cuda_template.h) in
// CUDA C.
#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"
#include "schedule_space/dense_cuda_template.h"

namespace tensortune::codegen::cuda {

namespace ss = schedule_space;

CudaKernelSource emit_dense_small_batch(const ss::Task& task, const ss::ConfigSpace& space,
                                        const ss::Config& config,
                                        const CudaKernelOptions& options) {
  const auto& w = std::get<ss::DenseWorkload>(task.workload);
  const ss::DenseSmallBatchSchedule s = ss::dense_small_batch_schedule(w, space, config);
  int64_t half = 1;  // the largest power of two below k_inner: the first reduction stride
  while (2 * half < s.k_inner) half *= 2;

  CudaKernelSource k;
  k.entry = options.entry.empty() ? "tt_dense_small_batch" : options.entry;
  k.grid = {w.out_features, w.batch, 1};
  k.block = {s.k_inner, 1, 1};
  k.shared_bytes = 4 * s.k_inner;
  k.signature = ss::template_of(task).signature(task, space, config);

  SourceWriter src;
  open_kernel(src, task, space, config, k, s.k_inner, options);
  src.line("__shared__ float partial[" + num(s.k_inner) + "];");
  src.line("const int t = threadIdx.x, m = blockIdx.y, j = blockIdx.x;");
  src.line("const float* a = data + m * " + num(w.in_features) + ";");
  src.line("const float* b = weight + j * " + num(w.in_features) + ";");
  src.line("float sum = 0.0f;");
  // Consecutive threads read consecutive k: every load of the block is coalesced.
  src.open_for("ko", s.k_outer);
  src.line("sum += a[ko * " + num(s.k_inner) + " + t] * b[ko * " + num(s.k_inner) + " + t];");
  src.close();
  src.line("partial[t] = sum;");
  src.line("__syncthreads();");
  if (s.k_inner > 1) {
    src.open("for (int stride = " + num(half) + "; stride > 0; stride >>= 1) {");
    src.line("if (t < stride && t + stride < " + num(s.k_inner) +
             ") partial[t] += partial[t + stride];");
    src.line("__syncthreads();");
    src.close();
  }
  src.line("if (t == 0) out[m * " + num(w.out_features) + " + j] = " +
           epilogue("partial[0]", "j", "m * " + num(w.out_features) + " + j", options) + ";");
  src.close();
  k.source = src.text();
  return k;
}

CudaKernelSource emit_dense_large_batch(const ss::Task& task, const ss::ConfigSpace& space,
                                        const ss::Config& config,
                                        const CudaKernelOptions& options) {
  const auto& w = std::get<ss::DenseWorkload>(task.workload);
  const ss::DenseLargeBatchSchedule s = ss::dense_large_batch_schedule(w, space, config);
  const int64_t K = w.in_features, N = w.out_features;
  const int64_t tm = s.tile_m(), tn = s.tile_n(), tk = s.tile_k();
  const std::string unroll = "#pragma unroll";

  CudaKernelSource k;
  k.entry = options.entry.empty() ? "tt_dense_large_batch" : options.entry;
  k.grid = {s.y[0], s.x[0], 1};
  k.block = {s.y[2], s.x[2], 1};
  k.shared_bytes = s.shared_bytes();
  k.signature = ss::template_of(task).signature(task, space, config);

  SourceWriter src;
  open_kernel(src, task, space, config, k, s.threads(), options);
  src.line("__shared__ float a_tile[" + num(tk * tm) + "];  // [k][m]");
  src.line("__shared__ float b_tile[" + num(tk * tn) + "];  // [k][n]");
  src.line("const int tx = threadIdx.x, ty = threadIdx.y;  // n and m threads");
  src.line("const int tid = ty * " + num(s.y[2]) + " + tx;");
  src.line("const int m0 = blockIdx.y * " + num(tm) + ", n0 = blockIdx.x * " + num(tn) + ";");
  src.line("float acc[" + num(s.accumulators()) + "];");
  src.line(unroll);
  src.line("for (int i = 0; i < " + num(s.accumulators()) + "; ++i) acc[i] = 0.0f;");
  src.open_for("ko", s.k[0]);
  src.line("__syncthreads();  // the previous step's tiles are consumed");
  // k fastest across threads: the global reads of each row are coalesced.
  src.open("for (int i = tid; i < " + num(tm * tk) + "; i += " + num(s.threads()) + ") {");
  src.line("a_tile[(i % " + num(tk) + ") * " + num(tm) + " + i / " + num(tk) +
           "] = data[(m0 + i / " + num(tk) + ") * " + num(K) + " + ko * " + num(tk) + " + i % " +
           num(tk) + "];");
  src.close();
  src.open("for (int i = tid; i < " + num(tn * tk) + "; i += " + num(s.threads()) + ") {");
  src.line("b_tile[(i % " + num(tk) + ") * " + num(tn) + " + i / " + num(tk) +
           "] = weight[(n0 + i / " + num(tk) + ") * " + num(K) + " + ko * " + num(tk) + " + i % " +
           num(tk) + "];");
  src.close();
  src.line("__syncthreads();");
  src.open_for("km", s.k[1]).open_for("ki", s.k[2], unroll);
  src.line("const int kk = km * " + num(s.k[2]) + " + ki;");
  src.open_for("vx", s.x[1], unroll).open_for("xi", s.x[3], unroll);
  src.line("const float av = a_tile[kk * " + num(tm) + " + (vx * " + num(s.x[2]) + " + ty) * " +
           num(s.x[3]) + " + xi];");
  src.open_for("vy", s.y[1], unroll).open_for("yi", s.y[3], unroll);
  src.line("acc[((vx * " + num(s.x[3]) + " + xi) * " + num(s.y[1]) + " + vy) * " + num(s.y[3]) +
           " + yi] += av * b_tile[kk * " + num(tn) + " + (vy * " + num(s.y[2]) + " + tx) * " +
           num(s.y[3]) + " + yi];");
  src.close().close().close().close();  // yi vy xi vx
  src.close().close();                  // ki km
  src.close();                          // ko
  src.open_for("vx", s.x[1], unroll).open_for("xi", s.x[3], unroll);
  src.line("const int m = m0 + (vx * " + num(s.x[2]) + " + ty) * " + num(s.x[3]) + " + xi;");
  src.open_for("vy", s.y[1], unroll).open_for("yi", s.y[3], unroll);
  src.line("const int j = n0 + (vy * " + num(s.y[2]) + " + tx) * " + num(s.y[3]) + " + yi;");
  const std::string value = "acc[((vx * " + num(s.x[3]) + " + xi) * " + num(s.y[1]) + " + vy) * " +
                            num(s.y[3]) + " + yi]";
  src.line("out[m * " + num(N) +
           " + j] = " + epilogue(value, "j", "m * " + num(N) + " + j", options) + ";");
  src.close().close().close().close();
  src.close();
  k.source = src.text();
  return k;
}

}  // namespace tensortune::codegen::cuda
