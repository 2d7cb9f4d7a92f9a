#include "compiler/measure/reference_ops.h"

namespace tensortune::measure {

namespace {

// Quantized: integer data and weights, an int64 sum wrapped to the int32 output (bias, when
// given, is int32 too).
Tensor conv2d_nchw_integer_reference(const Tensor& data, const Tensor& weight, const Tensor* bias,
                                     const schedule_space::Conv2dWorkload& w) {
  const int64_t oh = w.out_height(), ow = w.out_width();
  const int64_t icg = w.in_channels / w.groups, ocg = w.out_channels / w.groups;
  Tensor out = Tensor::zeros(DType::kInt32, {w.batch, w.out_channels, oh, ow});
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oc = 0; oc < w.out_channels; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          int64_t acc = bias ? bias->i64[oc] : 0;
          for (int64_t i = 0; i < icg; ++i)
            for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
              const int64_t ih = y * w.stride_h + kh * w.dilation_h - w.pad_top;
              if (ih < 0 || ih >= w.in_height) continue;
              for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
                const int64_t iw = x * w.stride_w + kw * w.dilation_w - w.pad_left;
                if (iw < 0 || iw >= w.in_width) continue;
                const int64_t ic = oc / ocg * icg + i;
                acc += data.i64[((n * w.in_channels + ic) * w.in_height + ih) * w.in_width + iw] *
                       weight.i64[((oc * icg + i) * w.kernel_h + kh) * w.kernel_w + kw];
              }
            }
          out.i64[((n * w.out_channels + oc) * oh + y) * ow + x] = wrap_integer(DType::kInt32, acc);
        }
  return out;
}

}  // namespace

Tensor conv2d_nchw_reference(const Tensor& data, const Tensor& weight, const Tensor* bias,
                             const schedule_space::Conv2dWorkload& w) {
  if (w.precision == schedule_space::Precision::kUInt8Int8)
    return conv2d_nchw_integer_reference(data, weight, bias, w);
  const int64_t oh = w.out_height(), ow = w.out_width();
  // Grouped: output channel oc reads the input channels of its group, (oc / ocg) * icg + i.
  const int64_t icg = w.in_channels / w.groups, ocg = w.out_channels / w.groups;
  Tensor out = Tensor::zeros({w.batch, w.out_channels, oh, ow});
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oc = 0; oc < w.out_channels; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double acc = bias ? bias->f32[oc] : 0.0;
          for (int64_t i = 0; i < icg; ++i)
            for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
              const int64_t ih = y * w.stride_h + kh * w.dilation_h - w.pad_top;
              if (ih < 0 || ih >= w.in_height) continue;
              for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
                const int64_t iw = x * w.stride_w + kw * w.dilation_w - w.pad_left;
                if (iw < 0 || iw >= w.in_width) continue;
                const int64_t ic = oc / ocg * icg + i;
                acc +=
                    static_cast<double>(
                        data.f32[((n * w.in_channels + ic) * w.in_height + ih) * w.in_width + iw]) *
                    weight.f32[((oc * icg + i) * w.kernel_h + kh) * w.kernel_w + kw];
              }
            }
          out.f32[((n * w.out_channels + oc) * oh + y) * ow + x] = static_cast<float>(acc);
        }
  return out;
}

Tensor dense_reference(const Tensor& data, const Tensor& weight, const Tensor* bias,
                       const schedule_space::DenseWorkload& w) {
  if (w.precision == schedule_space::Precision::kUInt8Int8) {
    Tensor out = Tensor::zeros(DType::kInt32, {w.batch, w.out_features});
    for (int64_t m = 0; m < w.batch; ++m)
      for (int64_t n = 0; n < w.out_features; ++n) {
        int64_t acc = bias ? bias->i64[n] : 0;
        for (int64_t k = 0; k < w.in_features; ++k)
          acc += data.i64[m * w.in_features + k] * weight.i64[n * w.in_features + k];
        out.i64[m * w.out_features + n] = wrap_integer(DType::kInt32, acc);
      }
    return out;
  }
  Tensor out = Tensor::zeros({w.batch, w.out_features});
  for (int64_t m = 0; m < w.batch; ++m)
    for (int64_t n = 0; n < w.out_features; ++n) {
      double acc = bias ? bias->f32[n] : 0.0;
      for (int64_t k = 0; k < w.in_features; ++k)
        acc += static_cast<double>(data.f32[m * w.in_features + k]) *
               weight.f32[n * w.in_features + k];
      out.f32[m * w.out_features + n] = static_cast<float>(acc);
    }
  return out;
}

Tensor reference_output(const schedule_space::Workload& w, const Tensor& data, const Tensor& weight,
                        const Tensor* bias) {
  if (const auto* c = std::get_if<schedule_space::Conv2dWorkload>(&w))
    return conv2d_nchw_reference(data, weight, bias, *c);
  return dense_reference(data, weight, bias, std::get<schedule_space::DenseWorkload>(w));
}

}  // namespace tensortune::measure
