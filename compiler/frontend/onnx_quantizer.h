#pragma once
/// \file
/// Post-training static quantization of an ONNX model into ONNX's QDQ form (what quantization
/// tools write and what ONNX Runtime and tensortune both run): every Conv, Gemm and MatMul whose
/// weight is an initializer (directly or through Identity nodes; weights written as Constant
/// nodes, and casts, reshapes and transposes of constants, are folded into initializers first;
/// batch norms after convolutions into their weights) reads its weight as int8
/// (symmetric, per output channel or per tensor) through a DequantizeLinear, and its activation
/// through a QuantizeLinear -> DequantizeLinear pair (uint8, per tensor, asymmetric) whose range is
/// the min-max over the calibration samples, computed by the reference interpreter. Biases stay
/// float (corrected for the weights' mean rounding error unless told not to).
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_io.h"
#include "compiler/graph/tensor.h"
#include "support/error.h"

namespace tensortune::frontend {

/// Which layers' weights lie in [-64, 64]: none, all, or those where it adds little noise.
enum class ReduceRange { kNone, kAll, kWhereQuiet };

struct QuantizeOptions {
  /// Weights: one scale per output channel (needs opset 13, else per tensor) or one per tensor.
  bool per_channel = true;
  /// Weights in [-64, 64] instead of [-127, 127] (ONNX Runtime's reduce_range): half the
  /// resolution, and exact fast int8 kernels on CPUs without VNNI (Precision::kUInt8Int7).
  /// kWhereQuiet narrows a layer's weights only when that grows the noise of its output (from
  /// rounding its activations and weights: weight_quantization.h) by at most `noise_growth`.
  ReduceRange reduce_range = ReduceRange::kNone;
  double noise_growth = 1.10;
  /// Cancel each layer's mean output error from its rounded weights (the calibration
  /// activations' mean times the weights' error) through its bias: Conv's and Gemm's (absent,
  /// or a float initializer of one value per output channel), and a MatMul's when an Add alone
  /// reads it and adds such an initializer (a linear layer as exporters write it).
  bool bias_correction = true;
  /// The samples the activations' ranges are measured on: input name -> value, one map each.
  std::vector<std::map<std::string, graph::Tensor>> calibration;
  /// An activation's range: its minimum and maximum over all samples, or (percentile < 100)
  /// the mean over the samples of its (100 - p)th and pth percentiles, which ignores the rare
  /// outliers that would stretch the 256 steps over mostly empty range.
  double percentile = 100;
  OnnxImportOptions import;  ///< input shapes, limits
  /// Also quantize each quantized layer's output (after a Relu or Clip that alone reads it), a
  /// residual Add of two quantized values and a MaxPool of one, as ONNX Runtime's quantizer
  /// does: runtimes that fuse DequantizeLinear -> Conv -> QuantizeLinear into one integer kernel
  /// (ONNX Runtime's QLinearConv) then find the whole pattern. More rounding than the layers'
  /// inputs alone: each such value is rounded to 256 steps once more.
  bool quantize_outputs = false;
  /// Write the model even when no node could be quantized (else that is an error naming why
  /// for the first nodes, and nothing is written).
  bool allow_none = false;
};

struct QuantizeReport {
  int quantized = 0;  ///< Conv / Gemm / MatMul nodes now reading int8
  /// Constant nodes and computations of constants (Identity, Cast, Reshape, Transpose,
  /// (Un)Squeeze, Flatten) folded into initializers first (onnx_constant_folding.h).
  int folded = 0;
  /// BatchNormalization nodes folded into the convolutions before them (onnx_batch_norm_folding.h).
  int batch_norms_folded = 0;
  int candidates = 0;
  bool per_channel = true;  ///< as written (per tensor below opset 13)
  int weight_max = 127;     ///< the widest layer's weights lie in [-weight_max, weight_max]
  int full = 0;             ///< weight tensors in [-127, 127]
  int reduced = 0;          ///< weight tensors in [-64, 64]
  int bias_corrected = 0;   ///< nodes whose bias cancels their weights' mean error
  int outputs_quantized =
      0;  ///< values quantized where computed (QuantizeOptions::quantize_outputs)
  /// ReduceRange::kWhereQuiet: "node 'NAME' (Conv): [-64, 64] would grow its output noise by
  /// 46.2%", one per weight kept in [-127, 127].
  std::vector<std::string> kept_full_range;
  /// "node 'NAME' (Gemm): its weight is not an initializer", one per node left in float.
  std::vector<std::string> skipped;
};

/// Reads `in`, writes the QDQ model to `out`. Fails naming the file, a calibration sample that
/// does not run, a model with no calibration sample, or (without allow_none) a model none of
/// whose nodes could be quantized.
Expected<QuantizeReport> quantize_onnx_file(const std::string& in, const std::string& out,
                                            const QuantizeOptions& options);

}  // namespace tensortune::frontend
