// attention.cuda (schedule_space/attention_cuda_template.h) in CUDA C: a block's queries stay in
// shared memory; per block of keys the scores are a register tile, each row's maximum and sum of
// exponentials are reduced through a shared table of per-thread partials, and the output
// accumulators are corrected by exp(old max - new max) before the block's exponentials times v's
// rows join them. The scores never reach global memory.
#include <algorithm>
#include <limits>

#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"
#include "schedule_space/attention_cuda_template.h"
#include "schedule_space/attention_template.h"

namespace tensortune::codegen::cuda {

namespace ss = schedule_space;

CudaKernelSource emit_attention(const ss::Task& task, const ss::ConfigSpace& space,
                                const ss::Config& config, const CudaKernelOptions& options) {
  const auto& w = std::get<ss::AttentionWorkload>(task.workload);
  const ss::AttentionCudaSchedule s = ss::attention_cuda_schedule(w, space, config);
  const int64_t M = w.m, N = w.n, K = w.k, DV = w.dv;
  const int64_t BM = s.tile_m(), BN = s.tile_n(), TX = s.x[1], YI = s.y[2], XI = s.x[2],
                CV = s.value_columns(), threads = s.threads();
  const std::string unroll = "#pragma unroll";
  const std::string minus_infinity = float_literal(-std::numeric_limits<float>::infinity());

  CudaKernelSource k;
  k.entry = options.entry.empty() ? "tt_attention" : options.entry;
  k.grid = {s.y[0] * w.batch, 1, 1};
  k.block = {TX, s.y[1], 1};
  k.shared_bytes = s.shared_bytes();
  k.signature = ss::template_of(task).signature(task, space, config);

  SourceWriter src;
  open_kernel(src, task, space, config, k, threads, options);
  src.line("__shared__ float q_tile[" + num(K * BM) + "];  // [k][row], scaled at use");
  src.line("__shared__ float kv_tile[" + num(std::max(K, DV) * BN) +
           "];  // k^T [k][key], then v [key][column]");
  src.line("__shared__ float p_tile[" + num(BM * BN) + "];  // exponentials [row][key]");
  src.line("__shared__ float row_max[" + num(BM * TX) + "], row_sum[" + num(BM * TX) +
           "];  // partials [row][tx]");
  src.line("const int tx = threadIdx.x, ty = threadIdx.y;");
  src.line("const int tid = ty * " + num(TX) + " + tx;");
  src.line("const int b = blockIdx.x / " + num(s.y[0]) + ", m0 = (blockIdx.x % " + num(s.y[0]) +
           ") * " + num(BM) + ";");
  // Tuning kernels find v and the mask after k^T in the weight buffer; a network's take them as
  // their first operands.
  const ss::AttentionOperandOffsets at = ss::attention_operand_offsets(w);
  src.line("const float* q = data + (long)b * " + num(M * K) + ";");
  src.line("const float* kt = weight + (long)b * " + num(K * N) + ";");
  src.line("const float* v = " +
           (options.inputs > 0 ? std::string("e0") : "weight + " + num(at.v) + "L") +
           " + (long)b * " + num(N * DV) + ";");
  if (w.has_mask()) {
    const std::string base = options.inputs > 0 ? "e1" : "weight + " + num(at.mask) + "L";
    src.line("const float* mask = " + base + " + (long)(b / " + num(w.batch / w.mask_batch) +
             ") * " + num(w.mask_rows * N) + ";");
  }
  // The block's queries, coalesced along K; rows past M read as zero (their results are not
  // stored).
  src.open("for (int i = tid; i < " + num(BM * K) + "; i += " + num(threads) + ") {");
  src.line("const int r = i / " + num(K) + ", kk = i % " + num(K) + ";");
  src.line("q_tile[kk * " + num(BM) + " + r] = m0 + r < " + num(M) + " ? q[(long)(m0 + r) * " +
           num(K) + " + kk] : 0.0f;");
  src.close();
  src.line("float running_max[" + num(YI) + "], running_sum[" + num(YI) + "], acc[" + num(YI * CV) +
           "];");
  src.line(unroll);
  src.open_for("i", YI);
  src.line("running_max[i] = " + minus_infinity + ";");
  src.line("running_sum[i] = 0.0f;");
  src.line(unroll);
  src.line("for (int c = 0; c < " + num(CV) + "; ++c) acc[i * " + num(CV) + " + c] = 0.0f;");
  src.close();

  src.open_for("kb", s.x[0]);
  src.line("const int n0 = kb * " + num(BN) + ";");
  src.line("__syncthreads();  // the previous block's v and exponentials are consumed");
  src.open("for (int i = tid; i < " + num(K * BN) + "; i += " + num(threads) + ") {");
  src.line("const int kk = i / " + num(BN) + ", n = i % " + num(BN) + ";");
  src.line("kv_tile[i] = n0 + n < " + num(N) + " ? kt[(long)kk * " + num(N) + " + n0 + n] : 0.0f;");
  src.close();
  src.line("__syncthreads();");
  // Scores of the thread's rows and keys: q broadcast, k^T's keys consecutive across tx.
  src.line("float score[" + num(YI * XI) + "];");
  src.line(unroll);
  src.line("for (int i = 0; i < " + num(YI * XI) + "; ++i) score[i] = 0.0f;");
  src.open_for("kk", K);
  src.line(unroll);
  src.open_for("i", YI);
  src.line("const float qv = q_tile[kk * " + num(BM) + " + ty * " + num(YI) + " + i];");
  src.line(unroll);
  src.open_for("c", XI);
  src.line("score[i * " + num(XI) + " + c] += qv * kv_tile[kk * " + num(BN) + " + tx + " + num(TX) +
           " * c];");
  src.close().close().close();  // c i kk
  src.line(unroll);
  src.open_for("i", YI);
  src.line("const int r = ty * " + num(YI) + " + i, m = m0 + r;");
  src.line("float top = " + minus_infinity + ";");
  src.line(unroll);
  src.open_for("c", XI);
  src.line("const int n = n0 + tx + " + num(TX) + " * c;");
  std::string masked = "score[i * " + num(XI) + " + c] * " + float_literal(float(w.scale));
  if (w.has_mask()) {
    const std::string row = w.mask_rows > 1 ? "m" : "0";
    masked += " + (m < " + num(M) + " ? mask[(long)" + row + " * " + num(N) + " + n] : 0.0f)";
  }
  src.line("const float x = n < " + num(N) + " ? " + masked + " : " + minus_infinity + ";");
  src.line("score[i * " + num(XI) + " + c] = x;");
  src.line("top = fmaxf(top, x);");
  src.close();
  src.line("row_max[r * " + num(TX) + " + tx] = top;");
  src.close();
  src.line("__syncthreads();  // every partial maximum is in; k^T is consumed");
  // v's rows into the buffer k^T used (keys past N read as zero).
  src.open("for (int i = tid; i < " + num(BN * DV) + "; i += " + num(threads) + ") {");
  src.line("kv_tile[i] = n0 + i / " + num(DV) + " < " + num(N) + " ? v[(long)n0 * " + num(DV) +
           " + i] : 0.0f;");
  src.close();
  src.line("float correction[" + num(YI) + "];");
  src.line(unroll);
  src.open_for("i", YI);
  src.line("const int r = ty * " + num(YI) + " + i;");
  src.line("float top = running_max[i];");
  src.open_for("t", TX);
  src.line("top = fmaxf(top, row_max[r * " + num(TX) + " + t]);");
  src.close();
  // Every key so far masked by -infinity: exponentials against 0 (all 0), not -inf - -inf.
  src.line("const float base = top == " + minus_infinity + " ? 0.0f : top;");
  src.line("correction[i] = expf(running_max[i] - base);");
  src.line("running_max[i] = top;");
  src.line("float sum = 0.0f;");
  src.line(unroll);
  src.open_for("c", XI);
  src.line("const float e = expf(score[i * " + num(XI) + " + c] - base);");
  src.line("p_tile[r * " + num(BN) + " + tx + " + num(TX) + " * c] = e;");
  src.line("sum += e;");
  src.close();
  src.line("row_sum[r * " + num(TX) + " + tx] = sum;");
  src.close();
  src.line("__syncthreads();  // the exponentials, their partial sums and v are in");
  src.line(unroll);
  src.open_for("i", YI);
  src.line("const int r = ty * " + num(YI) + " + i;");
  src.line("float sum = 0.0f;");
  src.open_for("t", TX);
  src.line("sum += row_sum[r * " + num(TX) + " + t];");
  src.close();
  src.line("running_sum[i] = running_sum[i] * correction[i] + sum;");
  src.line(unroll);
  src.line("for (int c = 0; c < " + num(CV) + "; ++c) acc[i * " + num(CV) +
           " + c] *= correction[i];");
  src.close();
  src.open_for("n", BN);
  src.line(unroll);
  src.open_for("i", YI);
  src.line("const float p = p_tile[(ty * " + num(YI) + " + i) * " + num(BN) + " + n];");
  src.line(unroll);
  src.open_for("c", CV);
  src.line("const int j = tx + " + num(TX) + " * c;");
  if (DV % TX == 0) {
    src.line("acc[i * " + num(CV) + " + c] += p * kv_tile[n * " + num(DV) + " + j];");
  } else {
    src.line("if (j < " + num(DV) + ") acc[i * " + num(CV) + " + c] += p * kv_tile[n * " + num(DV) +
             " + j];");
  }
  src.close().close().close();  // c i n
  src.close();                  // kb

  src.line(unroll);
  src.open_for("i", YI);
  src.line("const int m = m0 + ty * " + num(YI) + " + i;");
  src.line("if (m >= " + num(M) + ") continue;");
  src.line(unroll);
  src.open_for("c", CV);
  src.line("const int j = tx + " + num(TX) + " * c;");
  if (DV % TX != 0) src.line("if (j >= " + num(DV) + ") continue;");
  src.line("const long at = ((long)b * " + num(M) + " + m) * " + num(DV) + " + j;");
  src.line("out[at] = " +
           epilogue("acc[i * " + num(CV) + " + c] / running_sum[i]", "j", "at", options) + ";");
  src.close().close();
  src.close();
  k.source = src.text();
  return k;
}

}  // namespace tensortune::codegen::cuda
