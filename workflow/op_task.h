#pragma once
/// \file
/// One operator as a task, from the description `tune-op`, `op run` and Python's Task take: shapes
/// like "1x64x56x56", strides and dilations like "1,1", pads like "1,1,1,1" (top,left,bottom,right;
/// one value means all four, two mean (vertical, horizontal)).

#include <cstdint>
#include <string>
#include <vector>

#include "schedule_space/task.h"
#include "support/error.h"

namespace tensortune::workflow {

struct OpArgs {
  std::string op;               ///< see op_names()
  std::string target = "llvm";  ///< see op_target()
  std::string strides = "1,1";
  std::string pads = "0,0,0,0";
  std::string dilation = "1,1";
  /// Quantized templates: 8 (weights in [-128, 127]) or 7 (in [-64, 64]: Precision::kUInt8Int7).
  int weight_bits = 8;
  /// Float templates: "fp32" (or empty: the template's own), "tf32", "fp16", "bf16", "3xtf32"
  /// (schedule_space::parse_float_precision); a reduced one picks the tensor-core template for
  /// `--op dense`.
  std::string precision;
  /// batch_matmul: the weight is (B, N, K) (AutoTVM's transpose_b, the default) or, false,
  /// (B, K, N) (`--weight-kn`, as exporters write a MatMul's second operand).
  bool transpose_b = true;
  /// attention: the values' width Dv (0: the keys' K), the additive mask's shape
  /// "MBxMRxN" (empty: none) and the scores' scale (empty: 1/sqrt(K), as exporters write it).
  int64_t value_dim = 0;
  std::string mask;
  std::string scale;
};

/// "1x64x56x56" -> {1, 64, 56, 56}; `field` names the flag in errors.
Expected<std::vector<int64_t>> parse_shape(const std::string& text, const std::string& field);
/// "1,2" -> {1, 2}.
Expected<std::vector<int64_t>> parse_int_list(const std::string& text, const std::string& field);

/// --target: "llvm" (this CPU), "cuda" (compute capability 8.0), "cuda -arch=sm_XY" or
/// "cuda-smXY".
Expected<schedule_space::Target> op_target(const std::string& target);
/// The device key records of the target are filed under: the host's for llvm, "cuda-smXY".
std::string device_key_for(const schedule_space::Target& target);

/// The template name for --op among the templates of the target's backend: a template's name,
/// without or with its suffix, an alias, or the operator ("conv2d", "dense": the backend's
/// first template of it). Naming a template of another backend says which --target it needs.
Expected<std::string> template_for_op(const std::string& op, const schedule_space::Target& target);
/// What --op accepts, for --help: "conv2d_NCHWc (or conv2d), dense_pack (or dense), ...".
std::string op_names();
/// Whether the template's operator takes conv2d flags (--kernel, --strides, ...).
bool takes_conv2d_shapes(const std::string& template_name);

/// Builds and validates the task from the op and its --target, the data and weight shapes (NCHW and
/// OIHW for conv2d, (M, K) and (N, K) for dense, (B, M, K) and (B, N, K) or (B, K, N) for
/// batch_matmul, q (B, M, K) and k^T (B, K, N) for attention) and the flags. The template's
/// precision is the workload's: `--op conv2d_NCHWc_int8` makes a uint8 x int8 -> int32 convolution.
Expected<schedule_space::Task> make_op_task(const OpArgs& args,
                                            const std::vector<int64_t>& data_shape,
                                            const std::vector<int64_t>& weight_shape);

}  // namespace tensortune::workflow
