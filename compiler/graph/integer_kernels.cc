// Interpreter loops for integer convolution and matmul (ONNX's ConvInteger and MatMulInteger;
// the importer subtracts their zero points, the quantized network passes leave the data's to
// the convolution): products summed exactly in int64, the result wrapped to int32 as ONNX's
// int32 output holds it.
#include "compiler/graph/kernels.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::graph::kernels {

namespace {

int64_t zero_point_of(const Tensor* zero_point) { return zero_point ? zero_point->i64.at(0) : 0; }

}  // namespace

Tensor conv2d_integer(const Tensor& x, const Tensor& w, const Conv2dAttrs& a,
                      const Shape& out_shape, const Tensor* zero_point) {
  const int64_t zp = zero_point_of(zero_point);
  const Ints &s = a.strides, &p = a.pads, &d = a.dilations;
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OC = w.shape[0], ICG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  const int64_t OH = out_shape[2], OW = out_shape[3], OCG = OC / a.groups;
  Tensor out = Tensor::zeros(DType::kInt32, out_shape);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc) {
      const int64_t g = oc / OCG;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t acc = 0;
          for (int64_t icg = 0; icg < ICG; ++icg)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * s[0] + kh * d[0] - p[0], iw = ow * s[1] + kw * d[1] - p[1];
                if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;  // padding is zero
                acc += (x.i64[((n * C + g * ICG + icg) * H + ih) * W + iw] - zp) *
                       w.i64[((oc * ICG + icg) * KH + kh) * KW + kw];
              }
          out.i64[((n * OC + oc) * OH + oh) * OW + ow] = wrap_integer(DType::kInt32, acc);
        }
    }
  return out;
}

Tensor conv2d_nchwc_integer(const Tensor& x, const Tensor& w, const Tensor* zero_point,
                            const Conv2dNCHWcAttrs& a, const Shape& out_shape) {
  const int64_t zp = zero_point_of(zero_point);
  const Ints &s = a.strides, &p = a.pads, &d = a.dilations;
  const int64_t N = x.shape[0], CB = x.shape[1], H = x.shape[2], W = x.shape[3], IB = x.shape[4];
  const int64_t OB = out_shape[1], OH = out_shape[2], OW = out_shape[3], OBN = out_shape[4];
  const int64_t KH = w.shape[2], KW = w.shape[3];
  Tensor out = Tensor::zeros(DType::kInt32, out_shape);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ob = 0; ob < OB; ++ob)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t k = 0; k < OBN; ++k) {
            int64_t acc = 0;
            for (int64_t icb = 0; icb < CB; ++icb)
              for (int64_t kh = 0; kh < KH; ++kh)
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t ih = oh * s[0] + kh * d[0] - p[0],
                                iw = ow * s[1] + kw * d[1] - p[1];
                  if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;  // padding is zero
                  for (int64_t i = 0; i < IB; ++i)
                    acc += (x.i64[(((n * CB + icb) * H + ih) * W + iw) * IB + i] - zp) *
                           w.i64[((((ob * CB + icb) * KH + kh) * KW + kw) * IB + i) * OBN + k];
                }
            out.i64[(((n * OB + ob) * OH + oh) * OW + ow) * OBN + k] =
                wrap_integer(DType::kInt32, acc);
          }
  return out;
}

Tensor dense_integer(const Tensor& x, const Tensor& w, const Tensor* zero_point) {
  const int64_t zp = zero_point_of(zero_point);
  const int64_t M = x.shape[0], K = x.shape[1], N = w.shape[0];
  Tensor out = Tensor::zeros(DType::kInt32, {M, N});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (x.i64[m * K + k] - zp) * w.i64[n * K + k];
      out.i64[m * N + n] = wrap_integer(DType::kInt32, acc);
    }
  return out;
}

Tensor matmul_integer(const Tensor& a, const Tensor& b, const Shape& out_shape) {
  const int64_t rank = out_shape.size();
  const int64_t M = out_shape[rank - 2], N = out_shape[rank - 1], K = a.shape.back();
  const int64_t batches = num_elements(Shape(out_shape.begin(), out_shape.end() - 2));
  Tensor out = Tensor::zeros(DType::kInt32, out_shape);
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t* pa = &a.i64[matmul_batch_offset(out_shape, a.shape, bi)];
    const int64_t* pb = &b.i64[matmul_batch_offset(out_shape, b.shape, bi)];
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += pa[m * K + k] * pb[k * N + n];
        out.i64[(bi * M + m) * N + n] = wrap_integer(DType::kInt32, acc);
      }
  }
  return out;
}

}  // namespace tensortune::graph::kernels
