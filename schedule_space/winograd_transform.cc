#include "schedule_space/winograd_transform.h"

#include <cmath>

#include "support/error.h"

namespace tensortune::schedule_space {

// The construction: a 3-tap correlation is the transpose of multiplying a polynomial by the
// kernel's. Multiplying h (degree m-1) by g (degree r-1) evaluates both at the points and at
// infinity (the leading coefficient), multiplies, and interpolates back:
//   s = C [ (E_g g) (.) (E_h h) ],
// so the correlation y = E_h^T [ (E_g g) (.) (C^T d) ]: A = E_h, G = E_g, B = C. Lagrange's
// 1 / prod(a_j - a_l) factors are moved from C into G, which is applied to the weights once, in
// double, so that the transforms run on the data have the smallest entries the points allow.
WinogradMatrices make_winograd_matrices(int m, int r, const std::vector<double>& points) {
  WinogradMatrices w;
  w.m = m;
  w.r = r;
  w.alpha = m + r - 1;
  w.points = points;
  const int n = w.alpha - 1;
  TT_CHECK(static_cast<int>(points.size()) == n)
      << "F(" << m << "," << r << ") needs " << n << " finite points";
  const int alpha = w.alpha;

  w.at.assign(static_cast<size_t>(m * alpha), 0.0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) w.at[i * alpha + j] = std::pow(points[j], i);
    w.at[i * alpha + n] = i == m - 1 ? 1.0 : 0.0;
  }

  w.g.assign(static_cast<size_t>(alpha * r), 0.0);
  for (int j = 0; j < n; ++j) {
    double f = 1.0;
    for (int l = 0; l < n; ++l)
      if (l != j) f *= points[j] - points[l];
    TT_CHECK(f != 0.0) << "interpolation points must be distinct";
    for (int k = 0; k < r; ++k) w.g[j * r + k] = std::pow(points[j], k) / f;
  }
  for (int k = 0; k < r; ++k) w.g[n * r + k] = k == r - 1 ? 1.0 : 0.0;

  // Row j of B^T: the coefficients (x^0 first) of prod_{l != j} (x - a_l); the last row those
  // of prod_l (x - a_l).
  w.bt.assign(static_cast<size_t>(alpha * alpha), 0.0);
  for (int j = 0; j <= n; ++j) {
    std::vector<double> poly{1.0};
    for (int l = 0; l < n; ++l) {
      if (l == j) continue;
      std::vector<double> next(poly.size() + 1, 0.0);
      for (size_t k = 0; k < poly.size(); ++k) {
        next[k + 1] += poly[k];
        next[k] -= points[l] * poly[k];
      }
      poly = std::move(next);
    }
    for (size_t k = 0; k < poly.size(); ++k) w.bt[j * alpha + static_cast<int>(k)] = poly[k];
  }
  return w;
}

const WinogradMatrices& winograd_matrices(int m) {
  // Points: 0 and +-1 first (entries 0 and 1: exact, and the cheapest transforms), then the
  // pairs +-2 and +-1/2, whose powers stay exact in binary and whose reciprocal pairing keeps
  // B^T's and A^T's entries balanced; ratios of at most 4 between the largest and smallest
  // nonzero point keep float32's error well below the 1e-4 goal for m = 4 (the figures are in
  // docs/backend.md, printed by `tensortune_bench_winograd_accuracy`).
  static const WinogradMatrices f2 = make_winograd_matrices(2, 3, {0.0, 1.0, -1.0});
  static const WinogradMatrices f4 = make_winograd_matrices(4, 3, {0.0, 1.0, -1.0, 0.5, -2.0});
  static const WinogradMatrices f6 =
      make_winograd_matrices(6, 3, {0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0});
  switch (m) {
    case 2:
      return f2;
    case 4:
      return f4;
    case 6:
      return f6;
  }
  TT_CHECK(false) << "no Winograd tile m = " << m << " (2, 4 or 6)";
  return f2;
}

Tensor winograd_transform_weight(const Tensor& oihw, int m, int64_t oc_block) {
  const WinogradMatrices& t = winograd_matrices(m);
  const int64_t oc = oihw.shape[0], ic = oihw.shape[1];
  TT_CHECK(oihw.shape.size() == 4 && oihw.shape[2] == 3 && oihw.shape[3] == 3)
      << "Winograd weights must be OIHW 3x3";
  TT_CHECK(oc_block > 0 && oc % oc_block == 0) << "oc_block must divide the output channels";
  const int alpha = t.alpha;
  const int64_t ocb = oc / oc_block;
  Tensor u = Tensor::zeros({alpha * alpha, ocb, ic, oc_block});
  double gg[8 * 3];
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t i = 0; i < ic; ++i) {
      const float* g = &oihw.f32[static_cast<size_t>((o * ic + i) * 9)];
      // G g: alpha x 3, then (G g) G^T: alpha x alpha.
      for (int a = 0; a < alpha; ++a)
        for (int k = 0; k < 3; ++k) {
          double s = 0;
          for (int l = 0; l < 3; ++l) s += t.g[a * 3 + l] * g[l * 3 + k];
          gg[a * 3 + k] = s;
        }
      for (int a = 0; a < alpha; ++a)
        for (int b = 0; b < alpha; ++b) {
          double s = 0;
          for (int k = 0; k < 3; ++k) s += gg[a * 3 + k] * t.g[b * 3 + k];
          const int64_t p = a * alpha + b;
          u.f32[static_cast<size_t>(((p * ocb + o / oc_block) * ic + i) * oc_block +
                                    o % oc_block)] = static_cast<float>(s);
        }
    }
  }
  return u;
}

}  // namespace tensortune::schedule_space
