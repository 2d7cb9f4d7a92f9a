#pragma once
/// \file
/// The matrices of Winograd's minimal filtering algorithm F(m x m, 3 x 3), built from their
/// interpolation points, and the weight transform that the Winograd template's kernels read.
///
/// One output tile Y (m x m) of a 3x3 correlation over an input tile d (alpha x alpha, alpha =
/// m + 2) is
///     Y = A^T [ (G g G^T) (.) (B^T d B) ] A
/// where (.) is the element-wise product. The matrices come from the Toom-Cook construction
/// over alpha - 1 finite points and the point at infinity; the points decide the rounding error
/// in float32, so they are chosen for it (see winograd_transform.cc), not for integer entries.

#include <cstdint>
#include <vector>

#include "support/tensor.h"

namespace tensortune::schedule_space {

/// Row-major matrices in double: what the emitters turn into constants and the weight
/// transform uses as is.
struct WinogradMatrices {
  int m = 0;                   ///< output tile
  int r = 3;                   ///< kernel size
  int alpha = 0;               ///< input tile, m + r - 1
  std::vector<double> points;  ///< the finite interpolation points (alpha - 1 of them)
  std::vector<double> at;      ///< A^T: m x alpha
  std::vector<double> g;       ///< G: alpha x r
  std::vector<double> bt;      ///< B^T: alpha x alpha
};

/// The output tiles the templates offer.
inline constexpr int kWinogradTiles[] = {2, 4, 6};

/// F(m x m, 3 x 3) for m in kWinogradTiles; TT_CHECKs any other m.
const WinogradMatrices& winograd_matrices(int m);

/// The Toom-Cook matrices of F(m, r) over `points` (m + r - 2 distinct finite values).
WinogradMatrices make_winograd_matrices(int m, int r, const std::vector<double>& points);

/// OIHW float32 weights (KH = KW = 3) transformed and packed as the kernels read them:
/// U[alpha*alpha][OC/oc_block][IC][oc_block], U[p] = (G g G^T)[p] computed in double.
Tensor winograd_transform_weight(const Tensor& oihw, int m, int64_t oc_block);

}  // namespace tensortune::schedule_space
