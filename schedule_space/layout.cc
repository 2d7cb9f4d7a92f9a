#include "schedule_space/layout.h"

#include "support/error.h"

namespace tensortune::schedule_space {

NdArray pack_nchwc(const NdArray& in, int64_t x) {
  TT_CHECK(in.shape.size() == 4 && in.shape[1] % x == 0)
      << shape_to_string(in.shape) << " by " << x;
  const int64_t n = in.shape[0], c = in.shape[1], h = in.shape[2], w = in.shape[3];
  NdArray out({n, c / x, h, w, x});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t z = 0; z < w; ++z)
          out.data[(((i * (c / x) + ch / x) * h + y) * w + z) * x + ch % x] =
              in.data[((i * c + ch) * h + y) * w + z];
  return out;
}

NdArray unpack_nchwc(const NdArray& in) {
  TT_CHECK(in.shape.size() == 5) << shape_to_string(in.shape);
  const int64_t n = in.shape[0], cc = in.shape[1], h = in.shape[2], w = in.shape[3],
                x = in.shape[4];
  NdArray out({n, cc * x, h, w});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < cc * x; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t z = 0; z < w; ++z)
          out.data[((i * cc * x + ch) * h + y) * w + z] =
              in.data[(((i * cc + ch / x) * h + y) * w + z) * x + ch % x];
  return out;
}

NdArray pack_oihwio(const NdArray& in, int64_t x, int64_t y) {
  TT_CHECK(in.shape.size() == 4 && in.shape[0] % y == 0 && in.shape[1] % x == 0)
      << shape_to_string(in.shape);
  const int64_t o = in.shape[0], i = in.shape[1], kh = in.shape[2], kw = in.shape[3];
  NdArray out({o / y, i / x, kh, kw, x, y});
  for (int64_t a = 0; a < o; ++a)
    for (int64_t b = 0; b < i; ++b)
      for (int64_t r = 0; r < kh; ++r)
        for (int64_t s = 0; s < kw; ++s)
          out.data[(((((a / y) * (i / x) + b / x) * kh + r) * kw + s) * x + b % x) * y + a % y] =
              in.data[((a * i + b) * kh + r) * kw + s];
  return out;
}

NdArray pack_dense_weight(const NdArray& in, int64_t bn) {
  TT_CHECK(in.shape.size() == 2 && in.shape[0] % bn == 0) << shape_to_string(in.shape);
  const int64_t n = in.shape[0], k = in.shape[1];
  NdArray out({n / bn, k, bn});
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < k; ++b) out.data[((a / bn) * k + b) * bn + a % bn] = in.data[a * k + b];
  return out;
}

}  // namespace tensortune::schedule_space
