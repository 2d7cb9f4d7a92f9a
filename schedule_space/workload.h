#pragma once
/// \file
/// Operator instances to tune: shapes, strides, four-sided padding, dilation. Value types with
/// validation, output-shape arithmetic and FLOP counts. Padding is always (top, left, bottom,
/// right); nothing assumes symmetry.

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "support/error.h"
#include "support/tensor.h"

namespace tensortune::schedule_space {

/// The element types of a convolution or dense: float32 throughout, or quantized: uint8 data,
/// int8 weights, int32 output (what AutoTVM's int8 templates compute; int8 data is shifted to
/// uint8 by the caller, as QNN's lowering does).
///
/// kUInt8Int7 is kUInt8Int8 whose weights all lie in [-64, 64] (what a quantizer's "reduce
/// range" option writes, ONNX Runtime's and ours). Any two such products of uint8 data sum
/// within int16, so CPUs without VNNI can multiply bytes directly (`vpmaddubsw`) and stay
/// exact; full-range weights would saturate there. Its kernels differ, so its tasks and records
/// are its own (the weight tensor's dtype is "int7" in the workload key).
///
/// The reduced float precisions keep float32 buffers and float32 accumulation (and float32 for
/// everything outside the operator: softmax, normalisation, reductions), but round each input
/// of a product first, as tensor cores take them: kTf32 to TF32 (10 explicit mantissa bits,
/// round to nearest with ties away from zero, as `cvt.rna.tf32.f32`), kFloat16 to IEEE half
/// and kBFloat16 to bfloat16 (both round to nearest even). k3xTf32 splits each input x into
/// two TF32 values, big = tf32(x) and small = tf32(x - big), and sums three products of each
/// pair (small * big + big * small + big * big; small * small, below float32's rounding, is
/// left out): float32's accuracy from TF32 tensor cores, at three times their work. Their
/// kernels and timings differ, so their tasks and records are their own (the operands' dtype in
/// the workload key).
enum class Precision { kFloat32, kUInt8Int8, kUInt8Int7, kTf32, kFloat16, kBFloat16, k3xTf32 };

/// "float32", "uint8 x int8 -> int32", "uint8 x int7 -> int32", "tf32", "float16",
/// "bfloat16", "3xtf32".
const char* precision_name(Precision p);

/// Either quantized precision: uint8 data, int8 weight storage, int32 output.
inline bool is_quantized(Precision p) {
  return p == Precision::kUInt8Int8 || p == Precision::kUInt8Int7;
}

/// A tensor cores' float precision (tf32, float16, bfloat16, 3xtf32): float32 storage and
/// accumulation, products of rounded (or, 3xtf32, split) inputs.
inline bool is_reduced_float(Precision p) {
  return p == Precision::kTf32 || p == Precision::kFloat16 || p == Precision::kBFloat16 ||
         p == Precision::k3xTf32;
}

/// The precisions whose products are TF32 mma.sync instructions (m16n8k8): tf32 and 3xtf32.
inline bool uses_tf32_mma(Precision p) { return p == Precision::kTf32 || p == Precision::k3xTf32; }

/// A float precision by the name `--precision` takes: "fp32" or "float32", "tf32", "fp16" or
/// "float16", "bf16" or "bfloat16", "3xtf32". Refused naming the value and the choices.
Expected<Precision> parse_float_precision(const std::string& name);

/// `x` as the precision's products take it (itself for float32 and the quantized ones):
/// TF32 rounds to nearest, ties away from zero, on the magnitude (what `cvt.rna.tf32.f32`
/// computes: add half a TF32 ulp to the bits, clear the low 13; infinities and NaN are only
/// masked); float16 and bfloat16 round to nearest even, overflowing to infinity, float16's
/// subnormals kept. The result is a float32 holding that value exactly. 3xtf32 keeps x (its
/// split loses under float32's rounding: input_unit_roundoff says how much).
float round_to_precision(float x, Precision p);

/// The unit roundoff of the precision's rounded inputs (2^-11 for tf32 and float16, 2^-8 for
/// bfloat16, 2^-24 for float32): what a product's input may move by, relatively. For 3xtf32,
/// 2^-21: each split input is within 2^-22 of x relatively, and the product left out (small *
/// small) is within 2^-22 of the exact one, so a product moves by at most about 3 * 2^-22.
double input_unit_roundoff(Precision p);

/// The weight values a quantized precision allows: [-128, 127], or [-64, 64] for kUInt8Int7.
struct IntRange {
  int64_t lo = 0, hi = 0;
};
IntRange weight_range(Precision p);

/// The narrowest quantized precision whose weight range holds every value in [lo, hi].
Precision quantized_precision_for(int64_t lo, int64_t hi);

/// 2-D convolution, NCHW data and OIHW kernel, float32 (or quantized: precision). With groups > 1
/// the channels split into `groups` groups and the kernel is (OC, IC / groups, KH, KW): output
/// channel oc reads the input channels of group oc / (OC / groups). Depthwise convolution is groups
/// = IC = OC.
struct Conv2dWorkload {
  int64_t batch = 1, in_channels = 0, in_height = 0, in_width = 0;
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  Precision precision = Precision::kFloat32;

  bool is_depthwise() const {
    return groups > 1 && groups == in_channels && groups == out_channels;
  }
  /// out = floor((in + pad_begin + pad_end - dilation*(k-1) - 1) / stride) + 1
  int64_t out_height() const;
  int64_t out_width() const;
  /// 2 * N * OC * OH * OW * (IC / groups) * KH * KW.
  double flop() const;
  friend bool operator==(const Conv2dWorkload&, const Conv2dWorkload&) = default;
};

/// y[M, N] = x[M, K] * w[N, K]^T (+ bias[N]), float32; N is the number of output units.
struct DenseWorkload {
  int64_t batch = 0;         // M
  int64_t out_features = 0;  // N
  int64_t in_features = 0;   // K
  Precision precision = Precision::kFloat32;
  double flop() const { return 2.0 * batch * out_features * in_features; }
  friend bool operator==(const DenseWorkload&, const DenseWorkload&) = default;
};

/// y[b, M, N] = x[b, M, K] * w[b]: a product of two run-time tensors per batch entry (attention's
/// QK^T and its product with V), float32. AutoTVM's batch_matmul takes w as [B, N, K]
/// (transpose_b, its default, "NT"); exporters write [B, K, N] ("NN"), which transpose_b = false
/// keeps. Batch axes of higher rank are folded into `batch`.
struct BatchMatmulWorkload {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transpose_b = true;
  Precision precision = Precision::kFloat32;
  double flop() const { return 2.0 * batch * m * n * k; }
  friend bool operator==(const BatchMatmulWorkload&, const BatchMatmulWorkload&) = default;
};

/// out[b] = softmax(scale * q[b] k[b] + mask[b]) v[b], the softmax over each row's n keys: a
/// transformer's attention as one operator. q is [B, M, K], k [B, K, N] (K^T, as exporters write
/// it), v [B, N, Dv], out [B, M, Dv]. The additive mask is [mask_batch, mask_rows, N] (mask_batch
/// 0: none), broadcast over the batch entries (entry b reads mask entry b / (B / mask_batch): a
/// model's batch axis over its heads) and, where mask_rows is 1, over the rows. float32.
struct AttentionWorkload {
  int64_t batch = 1, m = 0, n = 0, k = 0, dv = 0;
  int64_t mask_batch = 0, mask_rows = 0;
  double scale = 1.0;
  Precision precision = Precision::kFloat32;
  bool has_mask() const { return mask_batch > 0; }
  int64_t mask_elements() const { return mask_batch * mask_rows * n; }
  /// The two products' multiply-adds (the softmax's exponentials are not counted).
  double flop() const { return 2.0 * batch * m * n * (k + dv); }
  friend bool operator==(const AttentionWorkload&, const AttentionWorkload&) = default;
};

using Workload =
    std::variant<Conv2dWorkload, DenseWorkload, BatchMatmulWorkload, AttentionWorkload>;

/// The workload's element types.
Precision precision_of(const Workload& w);

/// Every size positive, strides and dilations >= 1, pads >= 0, the dilated kernel no larger
/// than the padded input. Messages name the field and the value.
Status validate(const Conv2dWorkload& w);
Status validate(const DenseWorkload& w);
Status validate(const BatchMatmulWorkload& w);
/// Sizes in [1, 2^24]; a mask's batch dividing the batch and its rows 1 or m; a finite scale.
Status validate(const AttentionWorkload& w);
Status validate(const Workload& w);

double workload_flop(const Workload& w);

/// A float32 NCHW tensor copied from channel blocks of `from_block` to `to_block`
/// ((N, C/from, H, W, from) -> (N, C/to, H, W, to); block 1 is plain NCHW): what a
/// layout_transform node runs, timed for the graph tuner on the device that timed the kernels.
/// Not a template's workload: it has nothing to tune, and travels the farm on its own.
struct LayoutTransformWorkload {
  int64_t batch = 1, channels = 0, height = 0, width = 0;
  int64_t from_block = 1, to_block = 1;
  int64_t elements() const { return batch * channels * height * width; }
  friend bool operator==(const LayoutTransformWorkload&, const LayoutTransformWorkload&) = default;
};
/// Sizes positive, both blocks divide the channels, at most 2^28 elements; messages name the
/// field and the value.
Status validate(const LayoutTransformWorkload& w);
/// "layout_transform 1x64x56x56 16c->8c".
std::string describe_layout_transform(const LayoutTransformWorkload& w);

/// The element types of an operator's buffers: float32, or for a quantized convolution uint8
/// data, int8 weight, int32 bias and output.
struct OperandDTypes {
  DType data = DType::kFloat32, weight = DType::kFloat32, bias = DType::kFloat32,
        out = DType::kFloat32;
};
OperandDTypes operand_dtypes(const Workload& w);

/// The plain-layout shapes of an operator's buffers: conv2d NCHW data, OIHW weight, (OC) bias,
/// NCHW output; dense (M, K) data, (N, K) weight, (N) bias, (M, N) output; batch matmul (B, M, K)
/// data, (B, N, K) or (B, K, N) weight, (N) bias, (B, M, N) output; attention (B, M, K) q as the
/// data, the other run-time operands in one buffer as the weight (k as (B, K, N), v as
/// (B, N, Dv), then the mask's elements), (Dv) bias (no kernel reads it), (B, M, Dv) output.
struct OperandShapes {
  std::vector<int64_t> data, weight, bias, out;
};
OperandShapes operand_shapes(const Workload& w);
/// Bytes of the float32 operands and output of one run (data, weight, bias, out): what a
/// measurement allocates at the least, before packing copies.
double workload_bytes(const Workload& w);
/// Products summed into each output element (IC*KH*KW, or K; attention's K + N): the size of its
/// rounding error.
int64_t reduction_length(const Workload& w);

/// Builds a conv2d workload from an NCHW data shape and an OIHW kernel shape (groups = IC / I:
/// a kernel (C, 1, KH, KW) over C channels is depthwise). Strides and
/// dilation take 1 or 2 values (h, w); pads take 1 (all sides), 2 (vertical, horizontal) or 4
/// (top, left, bottom, right). Validates the result; messages name "strides", "pads", ...
Expected<Conv2dWorkload> conv2d_workload(const std::vector<int64_t>& data_nchw,
                                         const std::vector<int64_t>& kernel_oihw,
                                         const std::vector<int64_t>& strides,
                                         const std::vector<int64_t>& pads,
                                         const std::vector<int64_t>& dilation);

/// Dense from (M, K) data and (N, K) weight shapes, validated.
Expected<DenseWorkload> dense_workload(const std::vector<int64_t>& data_mk,
                                       const std::vector<int64_t>& weight_nk);

/// Batch matmul from (B, M, K) data and (B, N, K) (transpose_b) or (B, K, N) weight shapes,
/// validated; messages name the shapes.
Expected<BatchMatmulWorkload> batch_matmul_workload(const std::vector<int64_t>& data_bmk,
                                                    const std::vector<int64_t>& weight,
                                                    bool transpose_b);

/// A square conv2d with "same"-style symmetric padding k/2, batch 1: the shape of most CNN
/// layers (ResNet, VGG). For tables, tests and benchmarks.
Conv2dWorkload square_conv2d(int64_t in_channels, int64_t size, int64_t out_channels,
                             int64_t kernel, int64_t stride);

/// The four pads of TF/ONNX "SAME" padding for one spatial axis:
/// total = max((ceil(in/stride)-1)*stride + dilation*(k-1) + 1 - in, 0).
/// SAME_UPPER puts floor(total/2) at the beginning, SAME_LOWER puts ceil(total/2) there.
enum class AutoPad { kSameUpper, kSameLower, kValid };
struct PadPair {
  int64_t begin = 0, end = 0;
  friend bool operator==(const PadPair&, const PadPair&) = default;
};
PadPair auto_pad(AutoPad mode, int64_t in, int64_t kernel, int64_t stride, int64_t dilation);

}  // namespace tensortune::schedule_space
