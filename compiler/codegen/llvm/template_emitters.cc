// The LLVM backend's list of template emitters: one line per template whose backend is "llvm".
// A template without a line here cannot be compiled (compile_kernel says so); the test
// `Kernels.EveryLlvmTemplateHasAnEmitter` keeps the two lists in step.
#include "compiler/codegen/llvm/emitters.h"
#include "schedule_space/task.h"

namespace tensortune::codegen::emit {
namespace {

struct Registered {
  std::string_view template_name;
  TemplateEmitFn emit;
};

constexpr Registered kEmitters[] = {
    {schedule_space::kConv2dNCHWc, emit_conv2d_nchwc_task},
    {schedule_space::kConv2dNCHWcWinograd, emit_conv2d_winograd_task},
    {schedule_space::kDensePack, emit_dense_pack_task},
    {schedule_space::kDenseNopack, emit_dense_nopack_task},
    {schedule_space::kDepthwiseConv2dNCHWc, emit_depthwise_conv2d_nchwc_task},
    {schedule_space::kConv2dNCHWcInt8, emit_conv2d_nchwc_int8_task},
    {schedule_space::kDenseInt8, emit_dense_int8_task},
    {schedule_space::kBatchMatmulX86, emit_batch_matmul_task},
    {schedule_space::kAttentionX86, emit_attention_task},
};

}  // namespace

TemplateEmitFn find_template_emitter(std::string_view template_name) {
  for (const Registered& r : kEmitters)
    if (r.template_name == template_name) return r.emit;
  return nullptr;
}

}  // namespace tensortune::codegen::emit
