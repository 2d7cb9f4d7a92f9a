// depthwise_conv2d_nchw.cuda: the depthwise convolution of
// schedule_space/depthwise_conv2d_cuda_template.h in CUDA C.
#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"
#include "schedule_space/depthwise_conv2d_cuda_template.h"

namespace tensortune::codegen::cuda {

namespace ss = schedule_space;

CudaKernelSource emit_depthwise_conv2d_nchw(const ss::Task& task, const ss::ConfigSpace& space,
                                            const ss::Config& config,
                                            const CudaKernelOptions& options) {
  const auto& w = std::get<ss::Conv2dWorkload>(task.workload);
  const ss::DepthwiseCudaSchedule s = ss::depthwise_conv2d_nchw_cuda_schedule(w, space, config);
  const int64_t C = w.out_channels, H = w.in_height, W = w.in_width;
  const int64_t OH = w.out_height(), OW = w.out_width(), KH = w.kernel_h, KW = w.kernel_w;
  const int64_t wh = s.window_h(w), ww = s.window_w(w);
  const int64_t input_tile = s.input_tile_floats(w), weight_tile = s.weight_tile_floats(w);
  const int64_t acc = s.accumulators();
  const std::string pragma_tile = "#pragma unroll";
  const std::string pragma_window =
      unroll_pragma(KH * KW, s.auto_unroll_max_step, s.unroll_explicit);
  // Accumulator and output positions of the register tile (vthread and inner parts).
  const std::string acc_index = "((((vf * " + num(s.y[1]) + " + vy) * " + num(s.x[1]) +
                                " + vx) * " + num(s.f[3]) + " + fi) * " + num(s.y[3]) +
                                " + yi) * " + num(s.x[3]) + " + xi";
  const std::string local_f = "(vf * " + num(s.f[2]) + " + tz) * " + num(s.f[3]) + " + fi";
  const std::string local_y = "(vy * " + num(s.y[2]) + " + ty) * " + num(s.y[3]) + " + yi";
  const std::string local_x = "(vx * " + num(s.x[2]) + " + tx) * " + num(s.x[3]) + " + xi";

  CudaKernelSource k =
      tiled_conv_launch("tt_depthwise_conv2d_nchw", s, task, space, config, options);
  SourceWriter src;
  open_tiled_conv(src, s, k, input_tile, weight_tile, task, space, config, options);
  // The tile's input window, every channel of it, zero outside the image (padding inlined).
  src.line("const int iy0 = y0 * " + num(w.stride_h) + " - " + num(w.pad_top) + ";");
  src.line("const int ix0 = x0 * " + num(w.stride_w) + " - " + num(w.pad_left) + ";");
  src.open("for (int i = tid; i < " + num(input_tile) + "; i += " + num(s.threads()) + ") {");
  src.line("const int c = i / " + num(wh * ww) + ", r = i / " + num(ww) + " % " + num(wh) +
           ", q = i % " + num(ww) + ";");
  src.line("const int iy = iy0 + r, ix = ix0 + q;");
  src.line("input_tile[i] = (iy >= 0 && iy < " + num(H) + " && ix >= 0 && ix < " + num(W) +
           ") ? data[((n * " + num(C) + " + f0 + c) * " + num(H) + " + iy) * " + num(W) +
           " + ix] : 0.0f;");
  src.close();
  src.open("for (int i = tid; i < " + num(weight_tile) + "; i += " + num(s.threads()) + ") {");
  src.line("weight_tile[i] = weight[f0 * " + num(KH * KW) + " + i];");
  src.close();
  src.line("__syncthreads();");
  src.line("float acc[" + num(acc) + "];");
  src.line(pragma_tile);
  src.line("for (int i = 0; i < " + num(acc) + "; ++i) acc[i] = 0.0f;");
  src.open_for("ky", KH, pragma_window).open_for("kx", KW, pragma_window);
  src.open_for("vf", s.f[1], pragma_tile).open_for("fi", s.f[3], pragma_tile);
  src.line("const int fl = " + local_f + ";");
  src.line("const float wv = weight_tile[(fl * " + num(KH) + " + ky) * " + num(KW) + " + kx];");
  src.open_for("vy", s.y[1], pragma_tile).open_for("yi", s.y[3], pragma_tile);
  src.open_for("vx", s.x[1], pragma_tile).open_for("xi", s.x[3], pragma_tile);
  src.line("const int yl = " + local_y + ";");
  src.line("const int xl = " + local_x + ";");
  src.line("acc[" + acc_index + "] += input_tile[(fl * " + num(wh) + " + yl * " + num(w.stride_h) +
           " + ky * " + num(w.dilation_h) + ") * " + num(ww) + " + xl * " + num(w.stride_w) +
           " + kx * " + num(w.dilation_w) + "] * wv;");
  src.close().close().close().close().close().close();  // xi vx yi vy fi vf
  src.close().close();                                  // kx ky
  // Results, with the fused epilogue.
  src.open_for("vf", s.f[1], pragma_tile).open_for("fi", s.f[3], pragma_tile);
  src.line("const int f = f0 + " + local_f + ";");
  src.open_for("vy", s.y[1], pragma_tile).open_for("yi", s.y[3], pragma_tile);
  src.open_for("vx", s.x[1], pragma_tile).open_for("xi", s.x[3], pragma_tile);
  src.line("const int y = y0 + " + local_y + ";");
  src.line("const int x = x0 + " + local_x + ";");
  src.line("const int o = ((n * " + num(C) + " + f) * " + num(OH) + " + y) * " + num(OW) + " + x;");
  src.line("out[o] = " + epilogue("acc[" + acc_index + "]", "f", "o", options) + ";");
  src.close().close().close().close().close().close();
  src.close();  // kernel
  k.source = src.text();
  return k;
}

}  // namespace tensortune::codegen::cuda
