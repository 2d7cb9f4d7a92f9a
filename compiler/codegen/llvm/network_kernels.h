#pragma once
/// \file
/// Kernels of whole networks: one per fusion group, compiled together into one object file
/// that an artifact carries and a later process loads. LLVM stays behind this header.
///
/// Every network kernel has one ABI:
///   void kernel(const float* const* args, int64_t begin, int64_t end)
/// computing the slice [begin, end) of its parallel loop. The args are, by kind:
///   conv2d_NCHWc  data, weight (OIHW[x]i[y]o; depthwise O(1)HW(1)i[y]o), out, then the
///                 epilogue's operands
///   dense         data [M, K], weight (packed N/bn, K, bn, or plain N, K), out, operands
///   elementwise   out, then the operands in program order
///   max pool      out, data
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "compiler/codegen/epilogue_op.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/dense_template.h"
#include "schedule_space/workload.h"
#include "support/error.h"

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
    kDiv
  };
  Op op = Op::kIdentity;
  int a = 0, b = 0;
  float p0 = 0, p1 = 0;  ///< kClip: lo, hi; kHardSigmoid: alpha, beta
};

struct ElementwiseKernelSpec {
  std::vector<int64_t> out_shape;
  std::vector<std::vector<int64_t>> operand_strides;  ///< per operand, one per output axis
  std::vector<ElementwiseInstr> program;
};

/// Max pooling over NCHW[b]c (b = block; 1 for plain NCHW): data (N, C/b, H, W, b).
struct MaxPoolKernelSpec {
  std::vector<int64_t> in_shape;  ///< N, C/b, H, W, b
  int64_t out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, dilation_h = 1, dilation_w = 1;
};

using NetworkKernelSpec =
    std::variant<ConvKernelSpec, DenseKernelSpec, ElementwiseKernelSpec, MaxPoolKernelSpec>;

/// The parallel loop extent of a kernel (what [begin, end) ranges over).
int64_t parallel_extent(const NetworkKernelSpec& spec);

/// A stable text of the spec: equal texts compile to equal code (used to share kernels).
std::string spec_key(const NetworkKernelSpec& spec);

struct NamedKernel {
  std::string symbol;
  NetworkKernelSpec spec;
};

/// The CPU an object file is compiled for: what an artifact records and a loader checks.
struct CpuDescription {
  std::string triple;
  std::string cpu;                    ///< LLVM's name, e.g. "rocketlake"
  std::vector<std::string> features;  ///< the enabled ones, sorted ("avx512f", ...)
  int vector_lanes = 4;
};

CpuDescription host_cpu();

/// Features `required` enables that `host` lacks (empty: the code runs here).
std::vector<std::string> missing_features(const CpuDescription& required,
                                          const CpuDescription& host);

/// Emits every kernel into one module, optimises it and returns an ELF object for the host.
Expected<std::string> compile_network_object(const std::vector<NamedKernel>& kernels,
                                             int vector_lanes);

using NetworkKernelFn = void (*)(const float* const*, int64_t, int64_t);

/// Object code linked into this process (ORC); its kernels live as long as this does.
class LoadedObject {
 public:
  static Expected<LoadedObject> load(const std::string& object_code);
  /// kNotFound naming the symbol.
  Expected<NetworkKernelFn> lookup(const std::string& symbol) const;

  struct Impl;

 private:
  explicit LoadedObject(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace tensortune::codegen
