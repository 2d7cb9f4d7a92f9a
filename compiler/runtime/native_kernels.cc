#include "compiler/runtime/native_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/graph/op_attrs.h"
#include "compiler/graph/shape_rules.h"

namespace tensortune::runtime {

using graph::OpKind;
using graph::Shape;

namespace {

/// Copies `len` elements; the lengths of channel blocks (4 to 64 bytes) as fixed-size moves,
/// which compile to a register or two instead of a call.
template <class T>
inline void copy_run(const T* src, T* dst, int64_t len) {
  switch (static_cast<size_t>(len) * sizeof(T)) {
    case 4:
      std::memcpy(dst, src, 4);
      return;
    case 8:
      std::memcpy(dst, src, 8);
      return;
    case 16:
      std::memcpy(dst, src, 16);
      return;
    case 32:
      std::memcpy(dst, src, 32);
      return;
    case 64:
      std::memcpy(dst, src, 64);
      return;
    default:
      std::memcpy(dst, src, static_cast<size_t>(len) * sizeof(T));
  }
}

/// A run of contiguous channels an output block takes from one input block: `len` elements
/// from input offset `src` (at position 0) to output offset `dst` within the position.
struct Run {
  int64_t src, dst, len;
};

template <size_t Bytes, class T>
void copy_runs_fixed(const T* in, int64_t fb, T* out, int64_t tb, const std::vector<Run>& runs,
                     int64_t positions) {
  if (runs.size() == 1) {  // the output block within one input block: a strided copy
    const T* src = in + runs[0].src;
    T* dst = out + runs[0].dst;
    for (int64_t p = 0; p < positions; ++p) std::memcpy(dst + p * tb, src + p * fb, Bytes);
    return;
  }
  for (int64_t p = 0; p < positions; ++p)
    for (const Run& r : runs) std::memcpy(out + p * tb + r.dst, in + r.src + p * fb, Bytes);
}

/// The runs at `positions` consecutive positions (input stride fb, output stride tb): where
/// every run has one of the usual lengths, fixed-size moves chosen once, outside the loop.
template <class T>
void copy_runs(const T* in, int64_t fb, T* out, int64_t tb, const std::vector<Run>& runs,
               int64_t positions) {
  size_t bytes = static_cast<size_t>(runs[0].len) * sizeof(T);
  for (const Run& r : runs)
    if (static_cast<size_t>(r.len) * sizeof(T) != bytes) bytes = 0;
  switch (bytes) {
    case 4:
      return copy_runs_fixed<4>(in, fb, out, tb, runs, positions);
    case 8:
      return copy_runs_fixed<8>(in, fb, out, tb, runs, positions);
    case 16:
      return copy_runs_fixed<16>(in, fb, out, tb, runs, positions);
    case 32:
      return copy_runs_fixed<32>(in, fb, out, tb, runs, positions);
    case 64:
      return copy_runs_fixed<64>(in, fb, out, tb, runs, positions);
    default:
      for (int64_t p = 0; p < positions; ++p)
        for (const Run& r : runs) copy_run(in + r.src + p * fb, out + p * tb + r.dst, r.len);
  }
}

/// out[p * TB + j] = in[j * plane + p]: TB planes interleaved, the block a constant so that the
/// compiler turns the loop into vector shuffles (an image's 3 or 4 channels into blocks).
template <int TB, class T>
void interleave_fixed(const T* in, int64_t plane, T* out, int64_t positions) {
  for (int64_t p = 0; p < positions; ++p)
    for (int j = 0; j < TB; ++j) out[p * TB + j] = in[j * plane + p];
}

template <class T>
void interleave(const T* in, int64_t plane, T* out, int64_t tb, int64_t positions) {
  switch (tb) {
    case 1:
      return copy_run(in, out, positions);
    case 2:
      return interleave_fixed<2>(in, plane, out, positions);
    case 3:
      return interleave_fixed<3>(in, plane, out, positions);
    case 4:
      return interleave_fixed<4>(in, plane, out, positions);
    case 8:
      return interleave_fixed<8>(in, plane, out, positions);
    default:
      for (int64_t j = 0; j < tb; ++j)
        for (int64_t p = 0; p < positions; ++p) out[p * tb + j] = in[j * plane + p];
  }
}

/// NCHW[fb]c -> NCHW[tb]c (a block of 0 means plain NCHW).
/// T: float, or uint8_t for 8-bit integers (quantized data between int8 kernels).
template <class T>
NativeKernel layout_transform(const Shape& in_shape, int64_t from_block, int64_t to_block,
                              const T* in, T* out) {
  const int64_t N = in_shape[0], H = in_shape[2], W = in_shape[3];
  const int64_t C = from_block ? in_shape[1] * from_block : in_shape[1];
  const int64_t fb = std::max<int64_t>(from_block, 1), tb = std::max<int64_t>(to_block, 1);
  const int64_t HW = H * W, chunks = C / tb;
  if (tb < fb && tb < 4) {
    // To blocks of 1-3 (short output runs): input order (contiguous reads), each input block
    // scattered to fb / tb output blocks at once.
    const int64_t in_chunks = C / fb;
    return {[=](int64_t begin, int64_t end) {
              for (int64_t f = begin; f < end; ++f) {
                const int64_t n = f / in_chunks, chunk = f % in_chunks;
                const T* i = in + f * HW * fb;
                for (int64_t k = 0; k < fb; ++k) {
                  const int64_t c = chunk * fb + k;
                  T* o = out + ((n * (C / tb) + c / tb) * HW) * tb + c % tb;
                  for (int64_t hw = 0; hw < HW; ++hw) o[hw * tb] = i[hw * fb + k];
                }
              }
            },
            N * in_chunks};
  }
  // Output order (contiguous writes), one output chunk per iteration, or one row of one where
  // there are few chunks (the network's input, 3 channels: still split between threads). At
  // every position the chunk's tb channels come from the same runs of contiguous input (one per
  // input block the chunk spans), found once per iteration; the position loop then only copies.
  const int64_t rows = N * chunks >= 16 ? H : 1;  // per iteration
  const int64_t parts = H / rows;
  return {[=](int64_t begin, int64_t end) {
            std::vector<Run> runs;
            for (int64_t f = begin; f < end; ++f) {
              const int64_t h = f % parts * rows, nc = f / parts;
              const int64_t n = nc / chunks, chunk = nc % chunks;
              T* o = out + (nc * HW + h * W) * tb;
              const int64_t c0 = chunk * tb, positions = rows * W;
              if (fb == 1) {  // from plain NCHW: tb channel planes interleaved
                interleave(in + (n * C + c0) * HW + h * W, HW, o, tb, positions);
                continue;
              }
              runs.clear();
              for (int64_t j = 0; j < tb;) {
                const int64_t c = c0 + j;
                const int64_t len = std::min(fb - c % fb, tb - j);
                runs.push_back({(n * (C / fb) + c / fb) * HW * fb + h * W * fb + c % fb, j, len});
                j += len;
              }
              copy_runs(in, fb, o, tb, runs, positions);
            }
          },
          N * chunks * parts};
}

/// Mean over H x W in double, element by element in the interpreter's order.
NativeKernel global_avg_pool(const Shape& in_shape, const float* in, float* out) {
  const int64_t NC = in_shape[0] * in_shape[1], HW = in_shape[2] * in_shape[3];
  const int64_t B = in_shape.size() == 5 ? in_shape[4] : 1;
  return {[=](int64_t begin, int64_t end) {
            std::vector<double> sum(static_cast<size_t>(B));
            for (int64_t nc = begin; nc < end; ++nc) {
              std::fill(sum.begin(), sum.end(), 0.0);
              const float* x = in + nc * HW * B;
              for (int64_t i = 0; i < HW; ++i)
                for (int64_t b = 0; b < B; ++b) sum[b] += x[i * B + b];
              for (int64_t b = 0; b < B; ++b)
                out[nc * B + b] = static_cast<float>(sum[b] / double(HW));
            }
          },
          NC};
}

/// out[i0, .., ir] = in[base + sum(ik * stride[k])]: a transpose (strides permuted) or a slice
/// (strides times steps, base at the starts). One output row (all but the last axis) per
/// iteration; a unit last-axis stride copies the row at once.
NativeKernel strided_copy(const Shape& out_shape, std::vector<int64_t> stride, int64_t base,
                          const float* in, float* out) {
  const size_t rank = out_shape.size();
  if (rank == 0) return {[=](int64_t, int64_t) { out[0] = in[base]; }, 1};
  const int64_t row = out_shape.back(), inner = stride.back();
  const int64_t rows = row == 0 ? 0 : graph::num_elements(out_shape) / row;
  return {[=](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              int64_t src = base, rest = r;
              for (size_t d = rank - 1; d-- > 0;) {
                src += rest % out_shape[d] * stride[d];
                rest /= out_shape[d];
              }
              float* o = out + r * row;
              if (inner == 1) {
                std::memcpy(o, in + src, static_cast<size_t>(row) * sizeof(float));
              } else {
                for (int64_t i = 0; i < row; ++i) o[i] = in[src + i * inner];
              }
            }
          },
          rows};
}

/// A reduction over a run of adjacent axes: out[o, i] = f(x[o, 0..len, i]), in double and in
/// index order as the interpreter sums (max and min propagate NaN). One o per iteration.
NativeKernel reduce_axes(OpKind op, int64_t outer, int64_t len, int64_t inner, const float* in,
                         float* out) {
  return {[=](int64_t begin, int64_t end) {
            const bool extreme = op == OpKind::kReduceMax || op == OpKind::kReduceMin;
            std::vector<double> acc(static_cast<size_t>(inner));
            std::vector<char> nan(static_cast<size_t>(inner));
            for (int64_t o = begin; o < end; ++o) {
              std::fill(acc.begin(), acc.end(),
                        op == OpKind::kReduceMax   ? -INFINITY
                        : op == OpKind::kReduceMin ? INFINITY
                                                   : 0.0);
              std::fill(nan.begin(), nan.end(), 0);
              const float* x = in + o * len * inner;
              for (int64_t k = 0; k < len; ++k)
                for (int64_t i = 0; i < inner; ++i) {
                  const double v = x[k * inner + i];
                  if (extreme) {
                    nan[i] = nan[i] || std::isnan(v);
                    acc[i] = op == OpKind::kReduceMax ? std::max(acc[i], v) : std::min(acc[i], v);
                  } else {
                    acc[i] += v;
                  }
                }
              for (int64_t i = 0; i < inner; ++i) {
                double r = acc[i];
                if (op == OpKind::kReduceMean) r /= static_cast<double>(len);
                out[o * inner + i] = nan[i] ? NAN : static_cast<float>(r);
              }
            }
          },
          outer};
}

/// Softmax of each contiguous row, as the interpreter computes it (the row's maximum
/// subtracted, exponentials summed in double).
NativeKernel softmax_rows(int64_t rows, int64_t len, const float* in, float* out) {
  return {[=](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              const float* x = in + r * len;
              float* y = out + r * len;
              float m = -std::numeric_limits<float>::infinity();
              for (int64_t k = 0; k < len; ++k) m = std::max(m, x[k]);
              // Each exponential once (the same values the interpreter divides by its sum).
              thread_local std::vector<double> e;
              e.resize(static_cast<size_t>(len));
              double sum = 0;
              for (int64_t k = 0; k < len; ++k) sum += e[k] = std::exp(double(x[k]) - m);
              for (int64_t k = 0; k < len; ++k) y[k] = static_cast<float>(e[k] / sum);
            }
          },
          rows};
}

/// A (batched, broadcasting) matmul of two float operands, one output row per iteration:
/// each element sums its products in k order in float, as the interpreter does, so the
/// results agree bit for bit; the loop runs k outside the row so that the row vectorises.
NativeKernel matmul(const Shape& a_shape, const Shape& b_shape, const Shape& out_shape,
                    const float* a, const float* b, float* out) {
  const size_t rank = out_shape.size();
  const int64_t M = out_shape[rank - 2], N = out_shape[rank - 1], K = a_shape.back();
  const int64_t batches = graph::num_elements(Shape(out_shape.begin(), out_shape.end() - 2));
  return {[=](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              const int64_t bi = r / M, m = r % M;
              const float* pa = a + graph::matmul_batch_offset(out_shape, a_shape, bi) + m * K;
              const float* pb = b + graph::matmul_batch_offset(out_shape, b_shape, bi);
              float* o = out + r * N;
              std::fill(o, o + N, 0.0f);
              for (int64_t k = 0; k < K; ++k) {
                const float av = pa[k];
                const float* row = pb + k * N;
                for (int64_t n = 0; n < N; ++n) o[n] += av * row[n];
              }
            }
          },
          batches * M};
}

/// Layer normalisation of each contiguous row of `len` (scale and bias of `len` each; bias may
/// be absent), in double as the interpreter computes it.
NativeKernel layer_norm_rows(int64_t rows, int64_t len, double epsilon, const float* in,
                             const float* scale, const float* bias, float* out) {
  return {[=](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              const float* row = in + r * len;
              double mean = 0, var = 0;
              for (int64_t i = 0; i < len; ++i) mean += row[i];
              mean /= static_cast<double>(len);
              for (int64_t i = 0; i < len; ++i) var += (row[i] - mean) * (row[i] - mean);
              var /= static_cast<double>(len);
              const double inv = 1.0 / std::sqrt(var + epsilon);
              for (int64_t i = 0; i < len; ++i) {
                double v = (row[i] - mean) * inv * scale[i];
                if (bias) v += bias[i];
                out[r * len + i] = static_cast<float>(v);
              }
            }
          },
          rows};
}

/// Instance normalisation: each (n, c) row of `len` with channel c's scale and bias, in double
/// as the interpreter computes it.
NativeKernel instance_norm_rows(int64_t rows, int64_t channels, int64_t len, double epsilon,
                                const float* in, const float* scale, const float* bias,
                                float* out) {
  return {[=](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              const float* x = in + r * len;
              const int64_t c = r % channels;
              double mean = 0, var = 0;
              for (int64_t i = 0; i < len; ++i) mean += x[i];
              mean /= static_cast<double>(len);
              for (int64_t i = 0; i < len; ++i) var += (x[i] - mean) * (x[i] - mean);
              var /= static_cast<double>(len);
              const double inv = 1.0 / std::sqrt(var + epsilon);
              for (int64_t i = 0; i < len; ++i)
                out[r * len + i] = static_cast<float>((x[i] - mean) * inv * scale[c] + bias[c]);
            }
          },
          rows};
}

/// Concatenation along `axis`: for each index of the axes before it, every input's block in
/// turn (one such index per iteration).
NativeKernel concat(const std::vector<Shape>& shapes, int64_t axis,
                    std::vector<const float*> inputs, float* out) {
  const int64_t outer = graph::num_elements(Shape(shapes[0].begin(), shapes[0].begin() + axis));
  std::vector<int64_t> block;  // each input's elements per outer index
  int64_t row = 0;
  for (const Shape& s : shapes) {
    block.push_back(graph::num_elements(Shape(s.begin() + axis, s.end())));
    row += block.back();
  }
  return {[=](int64_t begin, int64_t end) {
            for (int64_t o = begin; o < end; ++o) {
              float* dst = out + o * row;
              for (size_t i = 0; i < inputs.size(); ++i) {
                std::memcpy(dst, inputs[i] + o * block[i],
                            static_cast<size_t>(block[i]) * sizeof(float));
                dst += block[i];
              }
            }
          },
          outer};
}

NativeKernel transpose(const Shape& in_shape, const graph::Ints& perm, const Shape& out_shape,
                       const float* in, float* out) {
  graph::StridedView v = graph::transpose_view(in_shape, perm);
  return strided_copy(out_shape, std::move(v.strides), v.base, in, out);
}

NativeKernel slice(const Shape& in_shape, const graph::SliceAttrs& a, const Shape& out_shape,
                   const float* in, float* out) {
  graph::StridedView v = graph::slice_view(in_shape, a.axes, a.starts, a.ends, a.steps);
  return strided_copy(out_shape, std::move(v.strides), v.base, in, out);
}

/// Constant padding that crops nothing: each output row (along the last axis) is the fill value,
/// with its input row copied into the middle where the row's other coordinates fall inside.
template <class T>
NativeKernel pad_constant(const Shape& in_shape, const graph::Ints& pads, const Shape& out_shape,
                          T value, const T* in, T* out) {
  const size_t rank = in_shape.size();
  if (rank == 0) return NativeKernel{[=](int64_t, int64_t) { *out = *in; }, 1};
  const int64_t row = out_shape.back(), in_row = in_shape.back(), before = pads[rank - 1];
  const int64_t rows = row == 0 ? 0 : graph::num_elements(out_shape) / row;
  return {[=](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              T* dst = out + r * row;
              int64_t rest = r, src_row = 0, stride = 1;
              bool inside = true;
              for (size_t d = rank - 1; d-- > 0 && inside;) {
                const int64_t c = rest % out_shape[d] - pads[d];
                rest /= out_shape[d];
                inside = c >= 0 && c < in_shape[d];
                src_row += c * stride;
                stride *= in_shape[d];
              }
              if (!inside) {
                std::fill(dst, dst + row, value);
                continue;
              }
              std::fill(dst, dst + before, value);
              std::memcpy(dst + before, in + src_row * in_row,
                          static_cast<size_t>(in_row) * sizeof(T));
              std::fill(dst + before + in_row, dst + row, value);
            }
          },
          rows};
}

/// where(cond, x, y) of a bool condition (one byte each) and float values, each broadcast to the
/// output by numpy's rule: one output row (the last axis) per iteration, each operand read along
/// it with stride 1 or 0.
NativeKernel where_rows(const std::array<Shape, 3>& shapes, const Shape& out_shape,
                        const uint8_t* cond, const float* x, const float* y, float* out) {
  const size_t rank = out_shape.size();
  std::array<std::vector<int64_t>, 3> strides;
  for (size_t k = 0; k < 3; ++k) {
    Shape shape = shapes[k];
    shape.insert(shape.begin(), rank - shape.size(), 1);
    strides[k] = graph::strides_of(shape);
    for (size_t d = 0; d < rank; ++d)
      if (shape[d] == 1) strides[k][d] = 0;
  }
  const int64_t row = rank == 0 ? 1 : out_shape.back();
  const int64_t rows = row == 0 ? 0 : graph::num_elements(out_shape) / row;
  return {[=](int64_t begin, int64_t end) {
            const int64_t sc = rank ? strides[0][rank - 1] : 0,
                          sx = rank ? strides[1][rank - 1] : 0,
                          sy = rank ? strides[2][rank - 1] : 0;
            for (int64_t r = begin; r < end; ++r) {
              int64_t rest = r, oc = 0, ox = 0, oy = 0;
              for (size_t d = rank - 1; d-- > 0;) {
                const int64_t i = rest % out_shape[d];
                rest /= out_shape[d];
                oc += i * strides[0][d];
                ox += i * strides[1][d];
                oy += i * strides[2][d];
              }
              float* o = out + r * row;
              for (int64_t j = 0; j < row; ++j)
                o[j] = cond[oc + j * sc] ? x[ox + j * sx] : y[oy + j * sy];
            }
          },
          rows};
}

}  // namespace

NativeKernel layout_transform_kernel(const Shape& in_shape, int64_t from_block, int64_t to_block,
                                     const float* in, float* out) {
  return layout_transform(in_shape, from_block, to_block, in, out);
}

Expected<NativeKernel> bind_native(const graph::Graph& g, const graph::Node& node,
                                   const std::vector<const float*>& inputs, float* out) {
  const float* in = inputs.at(0);
  const Shape& in_shape = g.type(node.inputs[0]).shape;
  const Shape& out_shape = g.type(node.output).shape;
  switch (node.op) {
    case OpKind::kLayoutTransform: {
      const auto a = graph::attrs_as<graph::LayoutTransformAttrs>(node.attrs);
      if (graph::buffer_element_size(g.type(node.output).dtype) == 1)
        return layout_transform(in_shape, a.from_block, a.to_block,
                                reinterpret_cast<const uint8_t*>(in),
                                reinterpret_cast<uint8_t*>(out));
      return layout_transform(in_shape, a.from_block, a.to_block, in, out);
    }
    case OpKind::kPad: {  // constant, cropping nothing (the lowering checks)
      const auto a = graph::attrs_as<graph::PadAttrs>(node.attrs);
      const graph::DType dtype = g.type(node.output).dtype;
      if (graph::buffer_element_size(dtype) == 1) {
        const auto byte = static_cast<uint8_t>(graph::float_to_integer(dtype, a.value));
        return pad_constant(in_shape, a.pads, out_shape, byte, reinterpret_cast<const uint8_t*>(in),
                            reinterpret_cast<uint8_t*>(out));
      }
      return pad_constant(in_shape, a.pads, out_shape, static_cast<float>(a.value), in, out);
    }
    case OpKind::kGlobalAvgPool2d:
      return global_avg_pool(in_shape, in, out);
    case OpKind::kReduceMean:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin: {  // over adjacent axes (the lowering checks)
      const auto axes = graph::attrs_as<graph::ReduceAttrs>(node.attrs).axes;
      const int64_t first = axes.front(), last = axes.back();
      return reduce_axes(
          node.op, graph::num_elements(Shape(in_shape.begin(), in_shape.begin() + first)),
          graph::num_elements(Shape(in_shape.begin() + first, in_shape.begin() + last + 1)),
          graph::num_elements(Shape(in_shape.begin() + last + 1, in_shape.end())), in, out);
    }
    case OpKind::kSoftmax: {  // over the last axis
      const int64_t len = in_shape.empty() ? 1 : in_shape.back();
      return softmax_rows(len == 0 ? 0 : graph::num_elements(in_shape) / len, len, in, out);
    }
    case OpKind::kMatMul:
      return matmul(in_shape, g.type(node.inputs[1]).shape, out_shape, in, inputs.at(1), out);
    case OpKind::kWhere:  // bool condition, float values (the lowering checks)
      return where_rows({in_shape, g.type(node.inputs[1]).shape, g.type(node.inputs[2]).shape},
                        out_shape, reinterpret_cast<const uint8_t*>(in), inputs.at(1), inputs.at(2),
                        out);
    case OpKind::kLayerNorm: {  // scale and bias of the normalised axes' size (lowering checks)
      const int64_t len = graph::num_elements(g.type(node.inputs[1]).shape);
      const int64_t rows = len == 0 ? 0 : graph::num_elements(in_shape) / len;
      return layer_norm_rows(rows, len, graph::attrs_as<graph::LayerNormAttrs>(node.attrs).epsilon,
                             in, inputs.at(1), inputs.size() > 2 ? inputs[2] : nullptr, out);
    }
    case OpKind::kInstanceNorm: {  // NC... data, scale and bias of C
      const int64_t rows = in_shape[0] * in_shape[1];
      const int64_t len = rows == 0 ? 0 : graph::num_elements(in_shape) / rows;
      return instance_norm_rows(rows, in_shape[1], len,
                                graph::attrs_as<graph::BatchNormAttrs>(node.attrs).epsilon, in,
                                inputs.at(1), inputs.at(2), out);
    }
    case OpKind::kConcat: {
      std::vector<Shape> shapes;
      for (graph::ValueId v : node.inputs) shapes.push_back(g.type(v).shape);
      return concat(shapes,
                    graph::normalize_axis(graph::attrs_as<graph::ConcatAttrs>(node.attrs).axis,
                                          out_shape.size()),
                    inputs, out);
    }
    case OpKind::kTranspose:
      return transpose(in_shape, graph::attrs_as<graph::TransposeAttrs>(node.attrs).perm, out_shape,
                       in, out);
    case OpKind::kSlice:
      return slice(in_shape, graph::attrs_as<graph::SliceAttrs>(node.attrs), out_shape, in, out);
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze: {
      const size_t bytes = static_cast<size_t>(graph::num_elements(out_shape)) * sizeof(float);
      return NativeKernel{[=](int64_t, int64_t) { std::memcpy(out, in, bytes); }, 1};
    }
    default:
      return Error{ErrorCode::kUnimplemented, std::string("no native kernel for ") +
                                                  graph::op_name(node.op) + " (node " + node.name +
                                                  ")"};
  }
}

}  // namespace tensortune::runtime
