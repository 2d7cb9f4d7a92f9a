// conv2d_nchw.cuda: the direct convolution of schedule_space/conv2d_cuda_template.h in CUDA C.
#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"
#include "schedule_space/conv2d_cuda_template.h"

namespace tensortune::codegen::cuda {

namespace ss = schedule_space;

CudaKernelSource emit_conv2d_nchw(const ss::Task& task, const ss::ConfigSpace& space,
                                  const ss::Config& config, const CudaKernelOptions& options) {
  const auto& w = std::get<ss::Conv2dWorkload>(task.workload);
  const ss::Conv2dCudaSchedule s = ss::conv2d_nchw_cuda_schedule(w, space, config);
  const int64_t C = w.in_channels, H = w.in_height, W = w.in_width, K = w.out_channels;
  const int64_t OH = w.out_height(), OW = w.out_width();
  const int64_t wh = s.window_h(w), ww = s.window_w(w);
  const int64_t input_tile = s.input_tile_floats(w), weight_tile = s.weight_tile_floats();
  const int64_t acc = s.accumulators();
  const int64_t reduce_steps = s.rc[1] * s.ry[1] * s.rx[1];
  const std::string pragma_tile = "#pragma unroll";
  const std::string pragma_rc =
      unroll_pragma(reduce_steps, s.auto_unroll_max_step, s.unroll_explicit);
  const std::string pragma_window =
      unroll_pragma(s.ry[1] * s.rx[1], s.auto_unroll_max_step, s.unroll_explicit);

  CudaKernelSource k = tiled_conv_launch("tt_conv2d_nchw", s, task, space, config, options);
  SourceWriter src;
  open_tiled_conv(src, s, k, input_tile, weight_tile, task, space, config, options);
  src.line("float acc[" + num(acc) + "];");
  src.line(pragma_tile);
  src.line("for (int i = 0; i < " + num(acc) + "; ++i) acc[i] = 0.0f;");
  src.open_for("rco", s.rc[0]).open_for("ryo", s.ry[0]).open_for("rxo", s.rx[0]);
  src.line("__syncthreads();  // the previous step's tiles are consumed");
  // The input window of this step, zero outside the image (padding inlined).
  src.line("const int iy0 = y0 * " + num(w.stride_h) + " + ryo * " + num(s.ry[1] * w.dilation_h) +
           " - " + num(w.pad_top) + ";");
  src.line("const int ix0 = x0 * " + num(w.stride_w) + " + rxo * " + num(s.rx[1] * w.dilation_w) +
           " - " + num(w.pad_left) + ";");
  src.open("for (int i = tid; i < " + num(input_tile) + "; i += " + num(s.threads()) + ") {");
  src.line("const int c = i / " + num(wh * ww) + ", r = i / " + num(ww) + " % " + num(wh) +
           ", q = i % " + num(ww) + ";");
  src.line("const int iy = iy0 + r, ix = ix0 + q;");
  src.line("input_tile[i] = (iy >= 0 && iy < " + num(H) + " && ix >= 0 && ix < " + num(W) +
           ") ? data[((n * " + num(C) + " + rco * " + num(s.rc[1]) + " + c) * " + num(H) +
           " + iy) * " + num(W) + " + ix] : 0.0f;");
  src.close();
  src.open("for (int i = tid; i < " + num(weight_tile) + "; i += " + num(s.threads()) + ") {");
  src.line("const int fl = i / " + num(reduce_steps) + ", c = i / " + num(s.ry[1] * s.rx[1]) +
           " % " + num(s.rc[1]) + ", r = i / " + num(s.rx[1]) + " % " + num(s.ry[1]) +
           ", q = i % " + num(s.rx[1]) + ";");
  src.line("weight_tile[i] = weight[(((f0 + fl) * " + num(C) + " + rco * " + num(s.rc[1]) +
           " + c) * " + num(w.kernel_h) + " + ryo * " + num(s.ry[1]) + " + r) * " +
           num(w.kernel_w) + " + rxo * " + num(s.rx[1]) + " + q];");
  src.close();
  src.line("__syncthreads();");
  src.open_for("rci", s.rc[1], pragma_rc)
      .open_for("ryi", s.ry[1], pragma_window)
      .open_for("rxi", s.rx[1], pragma_window);
  // The register tile: vthread and inner parts of f, y, x, always unrolled.
  src.open_for("vf", s.f[1], pragma_tile).open_for("fi", s.f[3], pragma_tile);
  src.line("const float wv = weight_tile[((((vf * " + num(s.f[2]) + " + tz) * " + num(s.f[3]) +
           " + fi) * " + num(s.rc[1]) + " + rci) * " + num(s.ry[1]) + " + ryi) * " + num(s.rx[1]) +
           " + rxi];");
  src.open_for("vy", s.y[1], pragma_tile).open_for("yi", s.y[3], pragma_tile);
  src.open_for("vx", s.x[1], pragma_tile).open_for("xi", s.x[3], pragma_tile);
  src.line("const int yl = (vy * " + num(s.y[2]) + " + ty) * " + num(s.y[3]) + " + yi;");
  src.line("const int xl = (vx * " + num(s.x[2]) + " + tx) * " + num(s.x[3]) + " + xi;");
  src.line("acc[((((vf * " + num(s.y[1]) + " + vy) * " + num(s.x[1]) + " + vx) * " + num(s.f[3]) +
           " + fi) * " + num(s.y[3]) + " + yi) * " + num(s.x[3]) + " + xi] += input_tile[(rci * " +
           num(wh) + " + yl * " + num(w.stride_h) + " + ryi * " + num(w.dilation_h) + ") * " +
           num(ww) + " + xl * " + num(w.stride_w) + " + rxi * " + num(w.dilation_w) + "] * wv;");
  src.close().close().close().close().close().close();  // xi vx yi vy fi vf
  src.close().close().close();                          // rxi ryi rci
  src.close().close().close();                          // rxo ryo rco
  // Results, with the fused epilogue.
  src.open_for("vf", s.f[1], pragma_tile).open_for("fi", s.f[3], pragma_tile);
  src.line("const int f = f0 + (vf * " + num(s.f[2]) + " + tz) * " + num(s.f[3]) + " + fi;");
  src.open_for("vy", s.y[1], pragma_tile).open_for("yi", s.y[3], pragma_tile);
  src.open_for("vx", s.x[1], pragma_tile).open_for("xi", s.x[3], pragma_tile);
  src.line("const int y = y0 + (vy * " + num(s.y[2]) + " + ty) * " + num(s.y[3]) + " + yi;");
  src.line("const int x = x0 + (vx * " + num(s.x[2]) + " + tx) * " + num(s.x[3]) + " + xi;");
  const std::string value = "acc[((((vf * " + num(s.y[1]) + " + vy) * " + num(s.x[1]) +
                            " + vx) * " + num(s.f[3]) + " + fi) * " + num(s.y[3]) + " + yi) * " +
                            num(s.x[3]) + " + xi]";
  src.line("const int o = ((n * " + num(K) + " + f) * " + num(OH) + " + y) * " + num(OW) + " + x;");
  src.line("out[o] = " + epilogue(value, "f", "o", options) + ";");
  src.close().close().close().close().close().close();
  src.close();  // kernel
  k.source = src.text();
  return k;
}

}  // namespace tensortune::codegen::cuda
