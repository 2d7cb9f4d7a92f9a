#include "schedule_space/layout.h"

#include "support/error.h"

namespace tensortune::schedule_space {
namespace {

// Element i of `in` to element o of `out` (same dtype), whichever vector holds them.
void copy_element(Tensor& out, int64_t o, const Tensor& in, int64_t i) {
  if (is_float(in.dtype))
    out.f32[o] = in.f32[i];
  else
    out.i64[o] = in.i64[i];
}

}  // namespace

Tensor pack_nchwc(const Tensor& in, int64_t x) {
  TT_CHECK(in.shape.size() == 4 && in.shape[1] % x == 0)
      << shape_to_string(in.shape) << " by " << x;
  const int64_t n = in.shape[0], c = in.shape[1], h = in.shape[2], w = in.shape[3];
  Tensor out = Tensor::zeros(in.dtype, {n, c / x, h, w, x});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t z = 0; z < w; ++z)
          copy_element(out, (((i * (c / x) + ch / x) * h + y) * w + z) * x + ch % x, in,
                       ((i * c + ch) * h + y) * w + z);
  return out;
}

Tensor unpack_nchwc(const Tensor& in) {
  TT_CHECK(in.shape.size() == 5) << shape_to_string(in.shape);
  const int64_t n = in.shape[0], cc = in.shape[1], h = in.shape[2], w = in.shape[3],
                x = in.shape[4];
  Tensor out = Tensor::zeros(in.dtype, {n, cc * x, h, w});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < cc * x; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t z = 0; z < w; ++z)
          copy_element(out, ((i * cc * x + ch) * h + y) * w + z, in,
                       (((i * cc + ch / x) * h + y) * w + z) * x + ch % x);
  return out;
}

Tensor pack_oihwio(const Tensor& in, int64_t x, int64_t y) {
  TT_CHECK(in.shape.size() == 4 && in.shape[0] % y == 0 && in.shape[1] % x == 0)
      << shape_to_string(in.shape);
  const int64_t o = in.shape[0], i = in.shape[1], kh = in.shape[2], kw = in.shape[3];
  Tensor out = Tensor::zeros({o / y, i / x, kh, kw, x, y});
  for (int64_t a = 0; a < o; ++a)
    for (int64_t b = 0; b < i; ++b)
      for (int64_t r = 0; r < kh; ++r)
        for (int64_t s = 0; s < kw; ++s)
          out.f32[(((((a / y) * (i / x) + b / x) * kh + r) * kw + s) * x + b % x) * y + a % y] =
              in.f32[((a * i + b) * kh + r) * kw + s];
  return out;
}

Tensor unpack_oihwio(const Tensor& in) {
  TT_CHECK(in.shape.size() == 6) << shape_to_string(in.shape);
  const int64_t x = in.shape[4], y = in.shape[5];
  const int64_t o = in.shape[0] * y, i = in.shape[1] * x, kh = in.shape[2], kw = in.shape[3];
  Tensor out = Tensor::zeros(in.dtype, {o, i, kh, kw});
  const bool floats = is_float(in.dtype);
  for (int64_t a = 0; a < o; ++a)
    for (int64_t b = 0; b < i; ++b)
      for (int64_t r = 0; r < kh; ++r)
        for (int64_t s = 0; s < kw; ++s) {
          const int64_t to = ((a * i + b) * kh + r) * kw + s;
          const int64_t from =
              (((((a / y) * (i / x) + b / x) * kh + r) * kw + s) * x + b % x) * y + a % y;
          if (floats)
            out.f32[to] = in.f32[from];
          else
            out.i64[to] = in.i64[from];
        }
  return out;
}

Tensor pack_dense_weight(const Tensor& in, int64_t bn) {
  TT_CHECK(in.shape.size() == 2 && in.shape[0] % bn == 0) << shape_to_string(in.shape);
  const int64_t n = in.shape[0], k = in.shape[1];
  Tensor out = Tensor::zeros({n / bn, k, bn});
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < k; ++b) out.f32[((a / bn) * k + b) * bn + a % bn] = in.f32[a * k + b];
  return out;
}

}  // namespace tensortune::schedule_space
