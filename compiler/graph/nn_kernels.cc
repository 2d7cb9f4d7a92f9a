// Interpreter loops for the neural-network operators. Float accumulation in a fixed order per
// output element; threads split only independent output planes.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <thread>

#include "compiler/graph/interpreter.h"
#include "compiler/graph/kernels.h"
#include "compiler/graph/shape_rules.h"
#include "support/thread_pool.h"

namespace tensortune::graph::kernels {

namespace {

thread_local ThreadPool* scoped_pool = nullptr;

/// One thread per core, started on first use: the interpreter's pool where no caller scoped
/// its own (tests and FoldConstant).
ThreadPool& default_pool() {
  static ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

}  // namespace

void unsupported_operands(const char* family, int member, const char* why) {
  TT_CHECK(false) << "the interpreter's " << family << " loop was handed member " << member << ": "
                  << why;
  std::abort();  // TT_CHECK's failure does not return; this tells the compiler so
}

void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  ThreadPool& pool = scoped_pool ? *scoped_pool : default_pool();
  if (n <= 1 || pool.size() == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool.run_on_all([&](int t) {
    for (int64_t i = t; i < n; i += pool.size()) fn(i);
  });
}

namespace {

// Output columns [lo, hi) whose input column ow*stride + offset lies inside [0, width).
std::pair<int64_t, int64_t> valid_columns(int64_t out_w, int64_t width, int64_t stride,
                                          int64_t offset) {
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t hi = width - 1 - offset < 0 ? 0 : (width - 1 - offset) / stride + 1;
  return {std::min(lo, out_w), std::clamp<int64_t>(hi, 0, out_w)};
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dAttrs& a, const Shape& out_shape) {
  const Ints &s = a.strides, &p = a.pads, &d = a.dilations;
  const int64_t groups = a.groups;
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OC = w.shape[0], ICG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  const int64_t OH = out_shape[2], OW = out_shape[3], OCG = OC / groups;
  Tensor out = Tensor::zeros(DType::kFloat32, out_shape);
  parallel_for(N * OC, [&](int64_t job) {
    const int64_t n = job / OC, oc = job % OC, g = oc / OCG;
    float* o = &out.f32[(n * OC + oc) * OH * OW];
    for (int64_t icg = 0; icg < ICG; ++icg) {
      const int64_t ic = g * ICG + icg;
      const float* in = &x.f32[(n * C + ic) * H * W];
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) {
          const float wv = w.f32[((oc * ICG + icg) * KH + kh) * KW + kw];
          const int64_t off = kw * d[1] - p[1];
          const auto [lo, hi] = valid_columns(OW, W, s[1], off);
          for (int64_t oh = 0; oh < OH; ++oh) {
            const int64_t ih = oh * s[0] + kh * d[0] - p[0];
            if (ih < 0 || ih >= H) continue;
            const float* row = in + ih * W + off;
            float* orow = o + oh * OW;
            for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += wv * row[ow * s[1]];
          }
        }
    }
  });
  (void)C;
  return out;
}

Tensor conv2d_nchwc(const Tensor& x, const Tensor& w, const Conv2dNCHWcAttrs& a,
                    const Shape& out_shape) {
  const Ints &s = a.strides, &p = a.pads, &d = a.dilations;
  const int64_t N = x.shape[0], CB = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t IB = x.shape[4];
  const int64_t OB = out_shape[1], OH = out_shape[2], OW = out_shape[3], OBN = out_shape[4];
  const int64_t KH = w.shape[2], KW = w.shape[3];
  const bool depthwise = a.groups != 1;
  Tensor out = Tensor::zeros(DType::kFloat32, out_shape);
  parallel_for(N * OB, [&](int64_t job) {
    const int64_t n = job / OB, ob = job % OB;
    float* o = &out.f32[(n * OB + ob) * OH * OW * OBN];
    if (depthwise) {
      // Output channel c = ob * OBN + k reads input channel c: lane c % IB of block c / IB.
      for (int64_t k = 0; k < OBN; ++k) {
        const int64_t c = ob * OBN + k;
        const float* in = &x.f32[(n * CB + c / IB) * H * W * IB + c % IB];
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t off = kw * d[1] - p[1];
            const auto [lo, hi] = valid_columns(OW, W, s[1], off);
            const float wv = w.f32[((ob * KH + kh) * KW + kw) * OBN + k];
            for (int64_t oh = 0; oh < OH; ++oh) {
              const int64_t ih = oh * s[0] + kh * d[0] - p[0];
              if (ih < 0 || ih >= H) continue;
              for (int64_t ow = lo; ow < hi; ++ow)
                o[(oh * OW + ow) * OBN + k] += in[(ih * W + ow * s[1] + off) * IB] * wv;
            }
          }
      }
      return;
    }
    for (int64_t icb = 0; icb < CB; ++icb) {
      const float* in = &x.f32[(n * CB + icb) * H * W * IB];
      const int64_t wicb = icb;
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t off = kw * d[1] - p[1];
          const auto [lo, hi] = valid_columns(OW, W, s[1], off);
          for (int64_t oh = 0; oh < OH; ++oh) {
            const int64_t ih = oh * s[0] + kh * d[0] - p[0];
            if (ih < 0 || ih >= H) continue;
            for (int64_t ow = lo; ow < hi; ++ow) {
              const float* px = in + (ih * W + ow * s[1] + off) * IB;
              float* po = o + (oh * OW + ow) * OBN;
              const float* wr = &w.f32[(((ob * CB + wicb) * KH + kh) * KW + kw) * IB * OBN];
              for (int64_t i = 0; i < IB; ++i)
                for (int64_t c = 0; c < OBN; ++c) po[c] += px[i] * wr[i * OBN + c];
            }
          }
        }
    }
  });
  return out;
}

Tensor dense(const Tensor& x, const Tensor& w) {
  const int64_t M = x.shape[0], K = x.shape[1], N = w.shape[0];
  Tensor out = Tensor::zeros(DType::kFloat32, {M, N});
  parallel_for(N, [&](int64_t n) {
    for (int64_t m = 0; m < M; ++m) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += x.f32[m * K + k] * w.f32[n * K + k];
      out.f32[m * N + n] = acc;
    }
  });
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape) {
  const int64_t rank = out_shape.size();
  const int64_t M = out_shape[rank - 2], N = out_shape[rank - 1], K = a.shape.back();
  const int64_t batches = num_elements(Shape(out_shape.begin(), out_shape.end() - 2));
  Tensor out = Tensor::zeros(DType::kFloat32, out_shape);
  auto batch_offset = [&](const Shape& op, int64_t bi) {
    return matmul_batch_offset(out_shape, op, bi);
  };
  for (int64_t bi = 0; bi < batches; ++bi) {
    const float* pa = &a.f32[batch_offset(a.shape, bi)];
    const float* pb = &b.f32[batch_offset(b.shape, bi)];
    float* po = &out.f32[bi * M * N];
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        float acc = 0.0f;
        for (int64_t k = 0; k < K; ++k) acc += pa[m * K + k] * pb[k * N + n];
        po[m * N + n] = acc;
      }
  }
  return out;
}

Tensor pool2d(PoolOp op, const Tensor& x, const Pool2dAttrs& a, const Shape& out_shape) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t B = x.shape.size() == 5 ? x.shape[4] : 1;
  const int64_t OH = out_shape[2], OW = out_shape[3];
  Tensor out = Tensor::zeros(DType::kFloat32, out_shape);
  if (op == PoolOp::kGlobalAvg) {
    for (int64_t nc = 0; nc < N * C; ++nc)
      for (int64_t b = 0; b < B; ++b) {
        double sum = 0;
        for (int64_t i = 0; i < H * W; ++i) sum += x.f32[(nc * H * W + i) * B + b];
        out.f32[nc * B + b] = static_cast<float>(sum / double(H * W));
      }
    return out;
  }
  const Ints &k = a.kernel, &s = a.strides, &p = a.pads, &d = a.dilations;
  const bool include_pad = a.count_include_pad != 0;
  parallel_for(N * C, [&](int64_t nc) {
    const float* in = &x.f32[nc * H * W * B];
    float* o = &out.f32[nc * OH * OW * B];
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t b = 0; b < B; ++b) {
          float best = -std::numeric_limits<float>::infinity();
          double sum = 0;
          int64_t valid = 0, padded = 0;
          for (int64_t kh = 0; kh < k[0]; ++kh) {
            const int64_t ih = oh * s[0] - p[0] + kh * d[0];
            if (ih >= H + p[2]) break;  // past the bottom padding (ceil mode)
            for (int64_t kw = 0; kw < k[1]; ++kw) {
              const int64_t iw = ow * s[1] - p[1] + kw * d[1];
              if (iw >= W + p[3]) break;
              ++padded;
              if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;
              const float v = in[(ih * W + iw) * B + b];
              best = std::max(best, v);
              sum += v;
              ++valid;
            }
          }
          const double divisor = double(std::max<int64_t>(include_pad ? padded : valid, 1));
          o[(oh * OW + ow) * B + b] = op == PoolOp::kMax ? best : static_cast<float>(sum / divisor);
        }
  });
  return out;
}

Tensor max_pool2d_indices(const Tensor& x, const Pool2dAttrs& a, const Shape& out_shape) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OH = out_shape[2], OW = out_shape[3];
  Tensor out = Tensor::zeros(DType::kInt64, out_shape);
  const Ints &k = a.kernel, &s = a.strides, &p = a.pads, &d = a.dilations;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t at = -1;
        for (int64_t kh = 0; kh < k[0]; ++kh)
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            const int64_t ih = oh * s[0] - p[0] + kh * d[0], iw = ow * s[1] - p[1] + kw * d[1];
            if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;
            const int64_t i = (nc * H + ih) * W + iw;
            if (at < 0 || x.f32[i] > best)
              best = x.f32[i], at = a.storage_order ? (nc * W + iw) * H + ih : i;
          }
        out.i64[(nc * OH + oh) * OW + ow] = at;
      }
  return out;
}

Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                  const Tensor& var, double epsilon) {
  Tensor out = x;
  const int64_t C = x.shape[1];
  const int64_t inner = num_elements(Shape(x.shape.begin() + 2, x.shape.end()));
  const int64_t outer = x.shape[0];
  for (int64_t n = 0; n < outer; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const double inv = 1.0 / std::sqrt(double(var.f32[c]) + epsilon);
      float* p = &out.f32[(n * C + c) * inner];
      for (int64_t i = 0; i < inner; ++i)
        p[i] = static_cast<float>((p[i] - mean.f32[c]) * inv * gamma.f32[c] + beta.f32[c]);
    }
  return out;
}

Tensor bias_add(const Tensor& x, const Tensor& bias, int64_t axis) {
  Tensor out = x;
  const int64_t C = x.shape[axis];
  const int64_t inner = num_elements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  for (int64_t i = 0; i < out.size(); ++i) out.f32[i] += bias.f32[(i / inner) % C];
  return out;
}

Tensor softmax(const Tensor& x, int64_t axis) {
  Tensor out = x;
  const int64_t len = x.shape[axis];
  const int64_t inner = num_elements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  const int64_t outer = x.size() / std::max<int64_t>(len * inner, 1);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      float* base = &out.f32[o * len * inner + i];
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < len; ++k) m = std::max(m, base[k * inner]);
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(double(base[k * inner]) - m);
      for (int64_t k = 0; k < len; ++k)
        base[k * inner] = static_cast<float>(std::exp(double(base[k * inner]) - m) / sum);
    }
  return out;
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                 double scale, const Shape& out_shape) {
  Shape scores_shape = out_shape;
  scores_shape.back() = k.shape.back();
  Tensor scores = matmul(q, k, scores_shape);
  const float s = static_cast<float>(scale);
  for (float& x : scores.f32) x *= s;
  if (mask) {
    const Tensor m = expand(*mask, scores_shape);
    for (size_t i = 0; i < scores.f32.size(); ++i) scores.f32[i] += m.f32[i];
  }
  return matmul(softmax(scores, static_cast<int64_t>(scores_shape.size()) - 1), v, out_shape);
}

}  // namespace tensortune::graph::kernels

namespace tensortune::graph {

ScopedInterpreterPool::ScopedInterpreterPool(ThreadPool& pool) : previous_(kernels::scoped_pool) {
  kernels::scoped_pool = &pool;
}

ScopedInterpreterPool::~ScopedInterpreterPool() { kernels::scoped_pool = previous_; }

}  // namespace tensortune::graph
