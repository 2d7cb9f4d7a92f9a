#include "compiler/measure/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tensortune::measure {

namespace {

// The direct convolution's loops: store(o, sum) for every output element o (NCHW), where sum is
// init(oc) plus product(data index, weight index) over the taps inside the input. Acc is the
// accumulator: double for float32, int64 (exact) for the quantized workloads. Grouped: output
// channel oc reads the input channels of its group, (oc / ocg) * icg + i.
template <typename Acc, typename Init, typename Product, typename Store>
void direct_conv(const schedule_space::Conv2dWorkload& w, Init init, Product product, Store store) {
  const int64_t oh = w.out_height(), ow = w.out_width();
  const int64_t icg = w.in_channels / w.groups, ocg = w.out_channels / w.groups;
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oc = 0; oc < w.out_channels; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          Acc acc = init(oc);
          for (int64_t i = 0; i < icg; ++i)
            for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
              const int64_t ih = y * w.stride_h + kh * w.dilation_h - w.pad_top;
              if (ih < 0 || ih >= w.in_height) continue;
              for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
                const int64_t iw = x * w.stride_w + kw * w.dilation_w - w.pad_left;
                if (iw < 0 || iw >= w.in_width) continue;
                const int64_t ic = oc / ocg * icg + i;
                acc += product(((n * w.in_channels + ic) * w.in_height + ih) * w.in_width + iw,
                               ((oc * icg + i) * w.kernel_h + kh) * w.kernel_w + kw);
              }
            }
          store(((n * w.out_channels + oc) * oh + y) * ow + x, acc);
        }
}

// The operand as a reduced float precision's products take it: each value rounded (a copy), or
// the operand itself for float32.
class RoundedOperand {
 public:
  RoundedOperand(const Tensor& t, schedule_space::Precision p) : tensor_(&t) {
    if (!schedule_space::is_reduced_float(p)) return;
    copy_ = t;
    for (float& v : copy_.f32) v = schedule_space::round_to_precision(v, p);
    tensor_ = &copy_;
  }
  const std::vector<float>& f32() const { return tensor_->f32; }

 private:
  const Tensor* tensor_;
  Tensor copy_;
};

}  // namespace

Tensor conv2d_nchw_reference(const Tensor& data, const Tensor& weight, const Tensor* bias,
                             const schedule_space::Conv2dWorkload& w) {
  const schedule_space::OperandShapes shapes = schedule_space::operand_shapes(w);
  if (schedule_space::is_quantized(w.precision)) {
    // uint8 data, int8 weights, an int32 bias: summed exactly, wrapped to the int32 output.
    Tensor out = Tensor::zeros(DType::kInt32, shapes.out);
    direct_conv<int64_t>(
        w, [&](int64_t oc) { return bias ? bias->i64[oc] : int64_t{0}; },
        [&](int64_t d, int64_t k) { return data.i64[d] * weight.i64[k]; },
        [&](int64_t o, int64_t acc) { out.i64[o] = wrap_integer(DType::kInt32, acc); });
    return out;
  }
  Tensor out = Tensor::zeros(shapes.out);
  const RoundedOperand x(data, w.precision), y(weight, w.precision);
  direct_conv<double>(
      w, [&](int64_t oc) { return bias ? static_cast<double>(bias->f32[oc]) : 0.0; },
      [&](int64_t d, int64_t k) { return static_cast<double>(x.f32()[d]) * y.f32()[k]; },
      [&](int64_t o, double acc) { out.f32[o] = static_cast<float>(acc); });
  return out;
}

Tensor dense_reference(const Tensor& data, const Tensor& weight, const Tensor* bias,
                       const schedule_space::DenseWorkload& w) {
  if (schedule_space::is_quantized(w.precision)) {
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
  const RoundedOperand x(data, w.precision), y(weight, w.precision);
  for (int64_t m = 0; m < w.batch; ++m)
    for (int64_t n = 0; n < w.out_features; ++n) {
      double acc = bias ? bias->f32[n] : 0.0;
      for (int64_t k = 0; k < w.in_features; ++k)
        acc += static_cast<double>(x.f32()[m * w.in_features + k]) * y.f32()[n * w.in_features + k];
      out.f32[m * w.out_features + n] = static_cast<float>(acc);
    }
  return out;
}

Tensor batch_matmul_reference(const Tensor& data, const Tensor& weight, const Tensor* bias,
                              const schedule_space::BatchMatmulWorkload& w) {
  const int64_t M = w.m, N = w.n, K = w.k;
  Tensor out = Tensor::zeros({w.batch, M, N});
  const RoundedOperand x(data, w.precision), y(weight, w.precision);
  for (int64_t b = 0; b < w.batch; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = bias ? bias->f32[n] : 0.0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t wi = w.transpose_b ? (b * N + n) * K + k : (b * K + k) * N + n;
          acc += static_cast<double>(x.f32()[(b * M + m) * K + k]) * y.f32()[wi];
        }
        out.f32[(b * M + m) * N + n] = static_cast<float>(acc);
      }
  return out;
}

Tensor attention_reference(const Tensor& q, const Tensor& operands, const Tensor* bias,
                           const schedule_space::AttentionWorkload& w) {
  const int64_t M = w.m, N = w.n, K = w.k, Dv = w.dv;
  const int64_t v_at = w.batch * K * N, mask_at = v_at + w.batch * N * Dv;
  const float* x = q.f32.data();
  const float* o = operands.f32.data();
  Tensor out = Tensor::zeros({w.batch, M, Dv});
  std::vector<double> p(static_cast<size_t>(N));
  for (int64_t b = 0; b < w.batch; ++b)
    for (int64_t m = 0; m < M; ++m) {
      double top = -INFINITY;
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += double(x[(b * M + m) * K + k]) * o[(b * K + k) * N + n];
        s *= w.scale;
        if (w.has_mask()) {
          const int64_t mb = b / (w.batch / w.mask_batch), mr = w.mask_rows > 1 ? m : 0;
          s += o[mask_at + (mb * w.mask_rows + mr) * N + n];
        }
        p[n] = s;
        top = std::max(top, s);
      }
      double sum = 0;
      for (double& e : p) sum += (e = std::exp(e - top));
      for (int64_t d = 0; d < Dv; ++d) {
        double acc = 0;
        for (int64_t n = 0; n < N; ++n) acc += p[n] * o[v_at + (b * N + n) * Dv + d];
        out.f32[(b * M + m) * Dv + d] = static_cast<float>(acc / sum + (bias ? bias->f32[d] : 0));
      }
    }
  return out;
}

Tensor reference_output(const schedule_space::Workload& w, const Tensor& data, const Tensor& weight,
                        const Tensor* bias) {
  if (const auto* c = std::get_if<schedule_space::Conv2dWorkload>(&w))
    return conv2d_nchw_reference(data, weight, bias, *c);
  if (const auto* b = std::get_if<schedule_space::BatchMatmulWorkload>(&w))
    return batch_matmul_reference(data, weight, bias, *b);
  if (const auto* a = std::get_if<schedule_space::AttentionWorkload>(&w))
    return attention_reference(data, weight, bias, *a);
  return dense_reference(data, weight, bias, std::get<schedule_space::DenseWorkload>(w));
}

}  // namespace tensortune::measure
