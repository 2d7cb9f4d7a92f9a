#include "bench/onednn_anchor.h"

#include <omp.h>

#include <numeric>
#include <oneapi/dnnl/dnnl.hpp>

namespace tensortune::bench {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

void fill(memory& m) {
  if (m.get_desc().data_type() != dt::f32) {  // u8 / s8: every byte value
    auto* p = static_cast<unsigned char*>(m.get_data_handle());
    const size_t n = m.get_desc().get_size();
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    return;
  }
  float* p = static_cast<float*>(m.get_data_handle());
  const size_t n = m.get_desc().get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
}

// The workload's element types in oneDNN's terms: f32 throughout, or u8 x s8 -> s32.
struct Types {
  dt src = dt::f32, wei = dt::f32, dst = dt::f32;
};
Types types_of(schedule_space::Precision p) {
  if (schedule_space::is_quantized(p)) return {dt::u8, dt::s8, dt::s32};
  return {};
}

AnchorResult time_primitive(dnnl::primitive& prim, dnnl::stream& s,
                            std::unordered_map<int, memory>& args, double flop,
                            const AnchorOptions& options, std::string impl) {
  auto run = [&] {
    prim.execute(s, args);
    s.wait();
  };
  // The weights and the output leave the caches; the data stays, as the layer before left it.
  auto flush = [&] {
    measure::evict_caches();
    for (int arg : {DNNL_ARG_WEIGHTS, DNNL_ARG_DST}) {
      const memory& m = args.at(arg);
      measure::flush_cache(m.get_data_handle(), m.get_desc().get_size());
    }
  };
  auto t = measure::time_evaluator(
      run, options.flush_cache ? std::function<void()>(flush) : nullptr, options.timing);
  auto kept = measure::drop_extremes(t.round_seconds);
  AnchorResult r;
  r.seconds = std::accumulate(kept.begin(), kept.end(), 0.0) / static_cast<double>(kept.size());
  r.gflops = flop / r.seconds / 1e9;
  r.impl = std::move(impl);
  return r;
}

}  // namespace

AnchorResult onednn_conv2d(const schedule_space::Conv2dWorkload& w, const AnchorOptions& options,
                           bool winograd) {
  omp_set_num_threads(options.threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const memory::dims src{w.batch, w.in_channels, w.in_height, w.in_width};
  const memory::dims wei{w.out_channels, w.in_channels, w.kernel_h, w.kernel_w};
  const memory::dims dst{w.batch, w.out_channels, w.out_height(), w.out_width()};
  const memory::dims strides{w.stride_h, w.stride_w};
  const memory::dims dilates{w.dilation_h - 1, w.dilation_w - 1};  // oneDNN counts extra gaps
  const memory::dims pad_l{w.pad_top, w.pad_left}, pad_r{w.pad_bottom, w.pad_right};
  // Every layout oneDNN's choice: float32 gets its blocked nChw16c with AVX-512 and nChw8c with
  // AVX2 (a fixed nChw16c sends AVX2 machines to its reference kernel), int8 nhwc.
  const Types ty = types_of(w.precision);
  memory::desc src_md(src, ty.src, tag::any), dst_md(dst, ty.dst, tag::any);
  memory::desc wei_md(wei, ty.wei, tag::any);
  auto make = [&](dnnl::algorithm algorithm) {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm, src_md, wei_md,
                                      dst_md, strides, dilates, pad_l, pad_r);
    return dnnl::convolution_forward::primitive_desc(d, eng);
  };
  std::string fallback;
  dnnl::convolution_forward::primitive_desc pd;
  if (winograd) {
    try {
      pd = make(dnnl::algorithm::convolution_winograd);
    } catch (const dnnl::error&) {
      // No Winograd implementation of this oneDNN takes the shape on this CPU.
      fallback = " (no Winograd here)";
    }
  }
  if (!pd) pd = make(dnnl::algorithm::convolution_direct);
  memory src_m(pd.src_desc(), eng), wei_m(pd.weights_desc(), eng), dst_m(pd.dst_desc(), eng);
  fill(src_m);
  fill(wei_m);
  dnnl::convolution_forward conv(pd);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_DST, dst_m}};
  return time_primitive(conv, s, args, w.flop(), options, pd.impl_info_str() + fallback);
}

AnchorResult onednn_dense(const schedule_space::DenseWorkload& w, const AnchorOptions& options) {
  omp_set_num_threads(options.threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const Types ty = types_of(w.precision);
  memory::desc src_md({w.batch, w.in_features}, ty.src, tag::nc);
  memory::desc wei_md({w.out_features, w.in_features}, ty.wei, tag::any);
  memory::desc dst_md({w.batch, w.out_features}, ty.dst, tag::nc);
  dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, src_md, wei_md, dst_md);
  dnnl::inner_product_forward::primitive_desc pd(d, eng);
  memory src_m(pd.src_desc(), eng), wei_m(pd.weights_desc(), eng), dst_m(pd.dst_desc(), eng);
  fill(src_m);
  fill(wei_m);
  dnnl::inner_product_forward ip(pd);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_DST, dst_m}};
  return time_primitive(ip, s, args, w.flop(), options, pd.impl_info_str());
}

}  // namespace tensortune::bench
