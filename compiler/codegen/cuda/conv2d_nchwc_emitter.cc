// conv2d_NCHWc.cuda: the blocked-layout convolution of schedule_space/conv2d_cuda_template.h in
// CUDA C.
#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"
#include "schedule_space/conv2d_cuda_template.h"

namespace tensortune::codegen::cuda {

namespace ss = schedule_space;

CudaKernelSource emit_conv2d_nchwc(const ss::Task& task, const ss::ConfigSpace& space,
                                   const ss::Config& config, const CudaKernelOptions& options) {
  const auto& w = std::get<ss::Conv2dWorkload>(task.workload);
  const ss::Conv2dNchwcCudaSchedule s = ss::conv2d_nchwc_cuda_schedule(w, space, config);
  const int64_t X = s.ic_bn, Y = s.oc_bn;
  const int64_t icb = w.in_channels / X, ocb = w.out_channels / Y;
  const int64_t H = w.in_height, W = w.in_width, OH = w.out_height(), OW = w.out_width();
  const int64_t wh = s.window_h(w), ww = s.window_w(w);
  const int64_t tile = s.input_tile_floats(w);
  const int64_t yi = s.y[2], xi = s.x[2];
  const std::string unroll = "#pragma unroll";

  CudaKernelSource k;
  k.entry = options.entry.empty() ? "tt_conv2d_nchwc" : options.entry;
  k.grid = {s.x[0], s.y[0], w.batch * s.f[0]};
  k.block = {s.x[1], s.y[1], s.f[1]};
  k.shared_bytes = s.shared_bytes(w);
  k.signature = ss::template_of(task).signature(task, space, config);

  SourceWriter src;
  open_kernel(src, task, space, config, k, s.threads(), options);
  src.line("__shared__ float input_tile[" + num(tile) + "];  // [block][row][col][x]");
  declare_thread_coordinates(src, s.y[1], s.x[1], s.f[0]);
  src.line("const int ob = (blockIdx.z % " + num(s.f[0]) + ") * " + num(s.f[1]) +
           " + tz;  // this thread's output-channel block");
  src.line("const int y0 = blockIdx.y * " + num(s.tile_y()) + ", x0 = blockIdx.x * " +
           num(s.tile_x()) + ";");
  src.line("float acc[" + num(s.accumulators()) + "];  // [yi][xi][y]");
  src.line(unroll);
  src.line("for (int i = 0; i < " + num(s.accumulators()) + "; ++i) acc[i] = 0.0f;");
  src.open_for("rco", s.rc[0]);
  src.line("__syncthreads();  // the previous step's tile is consumed");
  // The window of rc-inner input blocks, zero outside the image; consecutive threads fetch
  // consecutive floats (x innermost, then columns), as they lie in memory.
  src.line("const int iy0 = y0 * " + num(w.stride_h) + " - " + num(w.pad_top) + ", ix0 = x0 * " +
           num(w.stride_w) + " - " + num(w.pad_left) + ";");
  src.open("for (int i = tid; i < " + num(tile) + "; i += " + num(s.threads()) + ") {");
  src.line("const int c = i / " + num(wh * ww * X) + ", r = i / " + num(ww * X) + " % " + num(wh) +
           ", q = i / " + num(X) + " % " + num(ww) + ", e = i % " + num(X) + ";");
  src.line("const int iy = iy0 + r, ix = ix0 + q;");
  src.line("input_tile[i] = (iy >= 0 && iy < " + num(H) + " && ix >= 0 && ix < " + num(W) +
           ") ? data[(((n * " + num(icb) + " + rco * " + num(s.rc[1]) + " + c) * " + num(H) +
           " + iy) * " + num(W) + " + ix) * " + num(X) + " + e] : 0.0f;");
  src.close();
  src.line("__syncthreads();");
  src.open_for("rci", s.rc[1]).open_for("kh", w.kernel_h);
  src.open_for("kw", w.kernel_w, s.unroll_kw ? unroll : "#pragma unroll 1");
  src.open_for("e", X);
  // This thread's y weights: contiguous, shared by every thread of the channel block.
  src.line("const float* wp = weight + ((((ob * " + num(icb) + " + rco * " + num(s.rc[1]) +
           " + rci) * " + num(w.kernel_h) + " + kh) * " + num(w.kernel_w) + " + kw) * " + num(X) +
           " + e) * " + num(Y) + ";");
  src.open_for("a", yi, unroll).open_for("b", xi, unroll);
  src.line("const float v = input_tile[((rci * " + num(wh) + " + (ty * " + num(yi) + " + a) * " +
           num(w.stride_h) + " + kh * " + num(w.dilation_h) + ") * " + num(ww) + " + (tx * " +
           num(xi) + " + b) * " + num(w.stride_w) + " + kw * " + num(w.dilation_w) + ") * " +
           num(X) + " + e];");
  src.open_for("j", Y, unroll);
  src.line("acc[(a * " + num(xi) + " + b) * " + num(Y) + " + j] += v * wp[j];");
  src.close().close().close();          // j b a
  src.close().close().close().close();  // e kw kh rci
  src.close();                          // rco
  src.open_for("a", yi, unroll).open_for("b", xi, unroll);
  src.line("const int y = y0 + ty * " + num(yi) + " + a, x = x0 + tx * " + num(xi) + " + b;");
  src.open_for("j", Y, unroll);
  src.line("const int o = (((n * " + num(ocb) + " + ob) * " + num(OH) + " + y) * " + num(OW) +
           " + x) * " + num(Y) + " + j;");
  src.line("out[o] = " +
           epilogue("acc[(a * " + num(xi) + " + b) * " + num(Y) + " + j]",
                    "ob * " + num(Y) + " + j", "o", options) +
           ";");
  src.close().close().close();
  src.close();
  k.source = src.text();
  return k;
}

}  // namespace tensortune::codegen::cuda
