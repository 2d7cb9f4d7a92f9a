#pragma once
/// \file
/// What one kernel of a compiled network computes, independent of the back end that generates
/// it: the lowering (driver/lower.cc) builds these from fusion groups; the CPU back end
/// (codegen/llvm/network_kernels.h) and the GPU back end (codegen/cuda/network_kernels.h)
/// generate code for them. Header only. The CPU schedules (Conv2dSchedule, DenseSchedule) are
/// the CPU back end's; the GPU back end takes its configs from the CUDA templates instead.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "compiler/codegen/epilogue_op.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/dense_template.h"
#include "schedule_space/workload.h"

namespace tensortune::codegen {

struct ConvKernelSpec {
  schedule_space::Conv2dWorkload workload;
  schedule_space::Conv2dSchedule schedule;
  std::vector<EpilogueOp> epilogue;
  /// groups = channels: weight (C/b, 1, KH, KW, 1, b), b = oc_bn = ic_bn; reg_h is 1.
  bool depthwise = false;
};

struct DenseKernelSpec {
  schedule_space::DenseWorkload workload;
  schedule_space::DenseSchedule schedule;
  std::vector<EpilogueOp> epilogue;
};

/// An element-wise chain over one output shape. Each instruction reads operands (>= 0: the
/// kernel operand of that index; < 0: the result of instruction -1 - r); the last one is
/// stored. Operands are broadcast to the output shape by their strides (0 on broadcast axes).
struct ElementwiseInstr {
  enum class Op {
    kRelu,
    kClip,
    kSigmoid,
    kHardSigmoid,
    kHardSwish,
    kIdentity,
    kAdd,
    kSub,
    kMul,
    kDiv,
    // ONNX's element-wise math (issue 15); the transcendental ones in double, as the
    // interpreter computes them.
    kExp,
    kLog,
    kSqrt,
    kErf,
    kTanh,
    kNeg,
    kAbs,
    kFloor,
    kCeil,
    kRound,  ///< half to even
    kReciprocal,
    kSoftplus,
    kMish,
    kLeakyRelu,
    kElu,
    kSelu,
    kGelu
  };
  Op op = Op::kIdentity;
  int a = 0, b = 0;
  /// kClip: lo, hi; kHardSigmoid: alpha, beta; kLeakyRelu, kElu: alpha; kSelu: alpha, gamma;
  /// kGelu: p0 = 1 for the tanh approximation.
  float p0 = 0, p1 = 0;
};

struct ElementwiseKernelSpec {
  std::vector<int64_t> out_shape;
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

using NetworkKernelSpec =
    std::variant<ConvKernelSpec, DenseKernelSpec, ElementwiseKernelSpec, MaxPoolKernelSpec>;

struct NamedKernel {
  std::string symbol;
  NetworkKernelSpec spec;
};

}  // namespace tensortune::codegen
