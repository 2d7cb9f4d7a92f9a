#pragma once
/// \file
/// What one kernel of a compiled network computes, independent of the back end that generates
/// it: the lowering (driver/lower.cc) builds these from fusion groups; the CPU back end
/// (codegen/llvm/network_kernels.h) and the GPU back end (codegen/cuda/network_kernels.h)
/// generate code for them. Header only. Convolutions and dense layers are template kernels: the
/// template's own emitter builds them for the chosen config.
#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "compiler/epilogue/epilogue_op.h"
#include "schedule_space/config_space.h"
#include "schedule_space/task.h"
#include "schedule_space/workload.h"

namespace tensortune::codegen {

/// A template's kernel (conv2d, dense) for one config, with the fused epilogue; the backend's
/// emitter of task.template_name builds it.
struct TemplateKernelSpec {
  schedule_space::TemplateConfig kernel;
  std::vector<epilogue::EpilogueOp> epilogue;
  /// What the data's padding holds: an integer kernel's quantized zero point (the kernel reads
  /// it where the float convolution reads zeros); 0 otherwise.
  int64_t pad_value = 0;
};

/// Depthwise convolution (groups = channels, one output channel per input channel) in NCHW[b]c:
/// weight (C/b, 1, KH, KW, 1, b). The built-in kernel, for the nodes no depthwise template runs
/// (the lowering asks the templates first); its schedule is its own, not a template's config.
struct DepthwiseKernelSpec {
  schedule_space::Conv2dWorkload workload;
  int64_t block = 1;      ///< b: channels per block, in and out (1 for NCHW)
  int64_t row_width = 1;  ///< output columns per register tile (the CPU kernel's)
  std::vector<epilogue::EpilogueOp> epilogue;
};

/// The built-in depthwise kernel's row on a CPU of `lanes` float32 lanes: the widest divisor of
/// the output width, at most 8, whose accumulators (a vector per column and part of the block)
/// stay within the registers a tile may hold.
inline int64_t depthwise_row_width(const schedule_space::Conv2dWorkload& w, int64_t block,
                                   int lanes) {
  const int64_t vectors = (block + lanes - 1) / lanes;
  for (int64_t n = std::min<int64_t>(w.out_width(), 8); n > 1; --n)
    if (w.out_width() % n == 0 && n * vectors <= schedule_space::kMaxAccumulators) return n;
  return 1;
}

/// An element-wise chain over one output shape. Each instruction reads operands (>= 0: the
/// kernel operand of that index; < 0: the result of instruction -1 - r); the last one is
/// stored. Operands are broadcast to the output shape by their strides (0 on broadcast axes).
struct ElementwiseInstr {
  /// One instruction per element-wise operator of compiler/graph/ops.def (its Unary and Binary
  /// categories, same names): an operator added there is an instruction every emitter's switch
  /// must handle (they have no default, and the build has -Werror=switch). The transcendental
  /// ones compute in double, as the interpreter does.
  enum class Op {
#define TT_ELEMENTWISE_Anchor(kind)
#define TT_ELEMENTWISE_Other(kind)
#define TT_ELEMENTWISE_Unary(kind) kind,
#define TT_ELEMENTWISE_Binary(kind) kind,
#define TT_OP(kind, name, attrs, category) TT_ELEMENTWISE_##category(kind)
#include "compiler/graph/ops.def"
#undef TT_ELEMENTWISE_Anchor
#undef TT_ELEMENTWISE_Other
#undef TT_ELEMENTWISE_Unary
#undef TT_ELEMENTWISE_Binary
  };
  Op op = Op::kIdentity;
  int a = 0, b = 0;
  /// kClip: lo, hi; kHardSigmoid: alpha, beta; kLeakyRelu, kElu: alpha; kSelu: alpha, gamma;
  /// kGelu: p0 = 1 for the tanh approximation.
  float p0 = 0, p1 = 0;
};

struct ElementwiseKernelSpec {
  std::vector<int64_t> out_shape;
  /// float32, or uint8 / int8 when the chain ends in a cast to it (a quantization): the result
  /// is converted as the graph's Cast does (toward zero, saturated to int64 then wrapped; NaN
  /// gives 0) and stored one byte per element.
  DType out_dtype = DType::kFloat32;
  /// With an 8-bit out_dtype: the value cast is known to lie in int32's range (a clip's bounds
  /// in the chain or in front of it), so the conversion needs no saturation (NaN still gives 0).
  bool cast_input_bounded = false;
  std::vector<std::vector<int64_t>> operand_strides;  ///< per operand, one per output axis
  std::vector<ElementwiseInstr> program;
};

/// Max pooling (or, with `average`, average pooling) over NCHW[b]c (b = block; 1 for plain
/// NCHW): data (N, C/b, H, W, b).
struct MaxPoolKernelSpec {
  std::vector<int64_t> in_shape;  ///< N, C/b, H, W, b
  int64_t out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, dilation_h = 1, dilation_w = 1;
  /// Average pooling: the sum in double over the taps inside the input, divided by their count,
  /// or with count_include_pad by the count of taps inside the padded input (the bottom and
  /// right pads bound it in ceil mode), as the interpreter computes it.
  bool average = false, count_include_pad = false;
  int64_t pad_bottom = 0, pad_right = 0;
};

/// Softmax over the last axis of float32 rows: rows x len in, the same out, in float (the
/// exponentials as vector code, each row's max subtracted first).
struct SoftmaxKernelSpec {
  int64_t rows = 0, len = 0;
};

/// Layer normalisation of float32 rows: rows x len in (args: out, in, scale, then bias when
/// has_bias), scale and bias of len each. Computed in double as the interpreter computes it.
struct LayerNormKernelSpec {
  int64_t rows = 0, len = 0;
  double epsilon = 1e-5;
  bool has_bias = false;
};

using NetworkKernelSpec =
    std::variant<TemplateKernelSpec, DepthwiseKernelSpec, ElementwiseKernelSpec, MaxPoolKernelSpec,
                 SoftmaxKernelSpec, LayerNormKernelSpec>;

struct NamedKernel {
  std::string symbol;
  NetworkKernelSpec spec;
};

}  // namespace tensortune::codegen
