#pragma once
/// \file
/// Private to compiler/codegen/llvm: the IR emitters of each template. Each adds one function
/// with the common kernel ABI (see compiler/codegen/llvm/kernel.h) to a module.

#include <llvm/IR/IRBuilder.h>

#include <string>
#include <string_view>
#include <vector>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/codegen/llvm/network_kernels.h"
#include "schedule_space/conv2d_nchwc_int8_template.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/conv2d_winograd_template.h"
#include "schedule_space/dense_int8_template.h"
#include "schedule_space/dense_template.h"
#include "schedule_space/depthwise_conv2d_nchwc_template.h"

namespace llvm {
class Function;
class Module;
class Value;
}  // namespace llvm

namespace tensortune::codegen::emit {

/// What an anchor kernel's body reads and writes, as IR values of the function being emitted.
struct AnchorArgs {
  llvm::Value* data = nullptr;
  llvm::Value* weight = nullptr;
  llvm::Value* out = nullptr;
  std::vector<llvm::Value*> operands;  ///< the epilogue's
  /// A network kernel's run-time tensors besides data and weight (Template::extra_inputs:
  /// attention's v and mask); empty in tuning kernels, which find them in the weight buffer.
  std::vector<llvm::Value*> inputs;
  llvm::Value* begin = nullptr;
  llvm::Value* end = nullptr;
  std::vector<epilogue::EpilogueOp> epilogue;
  /// The value padding reads (integer kernels: the data's quantized zero point); 0 otherwise.
  int64_t pad_value = 0;
};

/// Emits the body of one template's tuning kernel for (task, config) into the function whose
/// arguments are `args` (the config is valid). Each template's emitter file defines one; the
/// list that maps template names to them is template_emitters.cc.
using TemplateEmitFn = void (*)(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                                const schedule_space::Task& task,
                                const schedule_space::ConfigSpace& space,
                                const schedule_space::Config& config);
/// nullptr when the template has no LLVM emitter.
TemplateEmitFn find_template_emitter(std::string_view template_name);

void emit_conv2d_nchwc_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                            const schedule_space::Task& task,
                            const schedule_space::ConfigSpace& space,
                            const schedule_space::Config& config);
void emit_conv2d_nchwc_int8_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                                 const schedule_space::Task& task,
                                 const schedule_space::ConfigSpace& space,
                                 const schedule_space::Config& config);
void emit_dense_int8_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                          const schedule_space::Task& task,
                          const schedule_space::ConfigSpace& space,
                          const schedule_space::Config& config);
void emit_conv2d_winograd_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                               const schedule_space::Task& task,
                               const schedule_space::ConfigSpace& space,
                               const schedule_space::Config& config);
void emit_depthwise_conv2d_nchwc_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                                      const schedule_space::Task& task,
                                      const schedule_space::ConfigSpace& space,
                                      const schedule_space::Config& config);
void emit_dense_pack_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                          const schedule_space::Task& task,
                          const schedule_space::ConfigSpace& space,
                          const schedule_space::Config& config);
void emit_dense_nopack_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                            const schedule_space::Task& task,
                            const schedule_space::ConfigSpace& space,
                            const schedule_space::Config& config);

void emit_batch_matmul_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                            const schedule_space::Task& task,
                            const schedule_space::ConfigSpace& space,
                            const schedule_space::Config& config);

void emit_attention_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                         const schedule_space::Task& task, const schedule_space::ConfigSpace& space,
                         const schedule_space::Config& config);

/// Tuning's KernelOptions as an epilogue over (bias).
std::vector<epilogue::EpilogueOp> epilogue_of(const KernelOptions& options);

/// Creates `name` with the tuning ABI of compiler/codegen/llvm/kernel.h (or, network = true, the
/// network ABI of compiler/codegen/llvm/network_kernels.h with `operands` epilogue operands after
/// data, weight, out) and returns its arguments in AnchorArgs form, the builder placed in its entry
/// block.
AnchorArgs begin_anchor_function(llvm::Module& m, llvm::IRBuilder<>& b, const std::string& name,
                                 int lanes, bool network, size_t operands);

/// Register-tiled direct convolution in NCHW[x]c. The fused (n, oc_chunk, oh_tile) loop is the
/// parallel one; each output tile of reg_h x reg_n positions x oc_bn channels keeps its
/// accumulators in vector registers across the whole (ic, kh, kw) reduction. Padding is handled
/// without a padded copy: tiles touching the border are emitted separately with the
/// out-of-range taps removed at compile time, interior tiles carry no checks at all.
void emit_conv2d_nchwc(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                       const schedule_space::Conv2dWorkload& w,
                       const schedule_space::Conv2dSchedule& s, int lanes);

/// Winograd F(m x m, 3 x 3) convolution in NCHW[x]c with weights pre-transformed to
/// U[alpha^2][OC/y][IC][y]: per block of output tiles, the input transform into a stack
/// scratch, the batched GEMM in register tiles, the output transform with the epilogue.
void emit_conv2d_winograd(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                          const schedule_space::Conv2dWorkload& w,
                          const schedule_space::WinogradSchedule& s, int lanes);

/// Depthwise convolution (groups = channels, one output channel per input channel) from
/// NCHW[ic_bn]c to NCHW[oc_bn]c; register tiles of s.reg_n columns of one row.
void emit_depthwise_nchwc(llvm::IRBuilder<>& b, const AnchorArgs& args,
                          const schedule_space::Conv2dWorkload& w,
                          const schedule_space::DepthwiseSchedule& s, int lanes);

/// Dense with packed weights (vectorised over output units) or plain weights (vectorised over
/// the reduction axis).
void emit_dense(llvm::IRBuilder<>& b, const AnchorArgs& args,
                const schedule_space::DenseWorkload& w, const schedule_space::DenseSchedule& s,
                int lanes);

/// Applies the epilogue to `value` (width lanes) about to be stored at `out_offset`, whose
/// channels start at `channel_offset`.
llvm::Value* apply_epilogue(llvm::IRBuilder<>& b, llvm::Value* value, const AnchorArgs& args,
                            llvm::Value* channel_offset, llvm::Value* out_offset, int width);

/// A network max-pooling kernel, complete with its function: one output row of one channel
/// block per parallel iteration, the block as the vector.
void emit_max_pool(llvm::Module& m, const std::string& name, const MaxPoolKernelSpec& spec,
                   int lanes);

/// A network softmax kernel over rows of spec.len floats, complete with its function
/// (out, in): one row per parallel iteration.
void emit_softmax(llvm::Module& m, const std::string& name, const SoftmaxKernelSpec& spec,
                  int lanes);

/// A network layer-norm kernel over rows of spec.len floats, complete with its function
/// (out, in, scale[, bias]): one row per parallel iteration.
void emit_layer_norm(llvm::Module& m, const std::string& name, const LayerNormKernelSpec& spec,
                     int lanes);

/// A network element-wise kernel, complete with its function.
void emit_elementwise(llvm::Module& m, const std::string& name, const ElementwiseKernelSpec& spec,
                      int lanes);

}  // namespace tensortune::codegen::emit
