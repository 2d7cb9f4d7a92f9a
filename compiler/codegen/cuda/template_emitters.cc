// The CUDA backend's list of template emitters: one line per template whose backend is "cuda".
// The template contract test keeps this list and the registry in step.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"

namespace tensortune::codegen::cuda {

namespace ss = schedule_space;
namespace {

struct Registered {
  std::string_view template_name;
  EmitFn emit;
};

constexpr Registered kEmitters[] = {
    {"conv2d_nchw.cuda", emit_conv2d_nchw},
    {"conv2d_NCHWc.cuda", emit_conv2d_nchwc},
    {"conv2d_nchw_winograd.cuda", emit_conv2d_nchw_winograd},
    {"depthwise_conv2d_nchw.cuda", emit_depthwise_conv2d_nchw},
    {"dense_small_batch.gpu", emit_dense_small_batch},
    {"dense_large_batch.gpu", emit_dense_large_batch},
    {"batch_matmul.cuda", emit_batch_matmul},
    {"attention.cuda", emit_attention},
    {"dense_tensorcore.cuda", emit_dense_tensorcore},
    {"batch_matmul_tensorcore.cuda", emit_batch_matmul_tensorcore},
    {"conv2d_nchw_tensorcore.cuda", emit_conv2d_nchw_tensorcore},
};

EmitFn find_emitter(std::string_view template_name) {
  for (const Registered& r : kEmitters)
    if (r.template_name == template_name) return r.emit;
  return nullptr;
}

}  // namespace

bool can_emit_cuda_kernel(std::string_view template_name) {
  return find_emitter(template_name) != nullptr;
}

Expected<CudaKernelSource> emit_cuda_kernel(const schedule_space::Task& task,
                                            const schedule_space::ConfigSpace& space,
                                            const schedule_space::Config& config,
                                            const CudaKernelOptions& options) {
  const EmitFn emit = find_emitter(task.template_name);
  if (!emit) return unimplemented("template " + task.template_name + " has no CUDA emitter");
  for (const epilogue::EpilogueOp& op : options.epilogue)
    if (op.kind == epilogue::EpilogueOp::Kind::kToFloat)
      return unimplemented("CUDA kernels accumulate in float: no integer epilogue");
    else if (op.kind == epilogue::EpilogueOp::Kind::kStoreTensor)
      return unimplemented("CUDA kernels store one output: no value stored midway");
    else if (op.kind == epilogue::EpilogueOp::Kind::kAddDequantized)
      return unimplemented("CUDA kernels read float operands: no residual read as bytes");
    else if (op.kind == epilogue::EpilogueOp::Kind::kGelu ||
             op.kind == epilogue::EpilogueOp::Kind::kGeluTanh)
      return unimplemented("CUDA epilogues have no GELU: it runs as an element-wise kernel");
    else if (op.operand < 0 && epilogue::uses_operand(op.kind))
      return invalid_argument("an epilogue step that takes an operand has operand index " +
                              std::to_string(op.operand));
  if (!space.is_valid(config))
    return Error{ErrorCode::kFailedPrecondition, "config " + std::to_string(config.index) + " (" +
                                                     space.describe(config) + ") is invalid for " +
                                                     task.template_name};
  if (options.inputs != 0 && options.inputs != ss::template_of(task).extra_inputs(task))
    return invalid_argument(task.template_name + " takes " +
                            std::to_string(ss::template_of(task).extra_inputs(task)) +
                            " extra inputs, not " + std::to_string(options.inputs));
  CudaKernelSource k = emit(task, space, config, options);
  k.epilogue_operands = options.inputs + options.operand_count();
  k.arg_count = 3 + k.epilogue_operands;
  return k;
}

int CudaKernelOptions::operand_count() const { return epilogue::epilogue_operand_count(epilogue); }

CudaKernelOptions CudaKernelOptions::bias_relu(bool bias, bool relu) {
  CudaKernelOptions o;
  if (bias) o.epilogue.push_back({epilogue::EpilogueOp::Kind::kAddChannel, 0});
  if (relu) o.epilogue.push_back({epilogue::EpilogueOp::Kind::kRelu});
  return o;
}

std::string kernel_params(const CudaKernelOptions& options) {
  std::string p = "(const float* __restrict__ data, const float* __restrict__ weight, ";
  p += !epilogue::stores_bytes(options.epilogue)                              ? "float"
       : options.epilogue.back().kind == epilogue::EpilogueOp::Kind::kToUInt8 ? "unsigned char"
                                                                              : "signed char";
  p += "* __restrict__ out";
  for (int i = 0; i < options.inputs + options.operand_count(); ++i)
    p += ", const float* __restrict__ e" + std::to_string(i);
  return p + ")";
}

std::string epilogue(const std::string& value, const std::string& channel, const std::string& index,
                     const CudaKernelOptions& options) {
  using Kind = epilogue::EpilogueOp::Kind;
  std::string v = value;
  for (const epilogue::EpilogueOp& op : options.epilogue) {
    std::string e = "e";  // appended, not "e" + ...: GCC 12 warns falsely (-Wrestrict) there
    e += std::to_string(options.inputs + op.operand);  // the extra inputs come first
    switch (op.kind) {
      case Kind::kAddChannel:
        v = "(" + v + " + " + e + "[" + channel + "])";
        break;
      case Kind::kMulChannel:
        v = "(" + v + " * " + e + "[" + channel + "])";
        break;
      case Kind::kDivChannel:
        v = "(" + v + " / " + e + "[" + channel + "])";
        break;
      case Kind::kRound:  // half to even in the default rounding mode
        v = "rintf(" + v + ")";
        break;
      case Kind::kAddTensor:
        v = "(" + v + " + " + e + "[" + index + "])";
        break;
      case Kind::kMulTensor:
        v = "(" + v + " * " + e + "[" + index + "])";
        break;
      case Kind::kRelu:
        v = "fmaxf(" + v + ", 0.0f)";
        break;
      case Kind::kClip:
        // Exact float literals: the bounds as the graph holds them; an infinite one is no bound
        // (SimplifyEpilogue writes relu as a clip from 0).
        if (!std::isinf(op.lo)) v = "fmaxf(" + v + ", " + float_literal(op.lo) + ")";
        if (!std::isinf(op.hi)) v = "fminf(" + v + ", " + float_literal(op.hi) + ")";
        break;
      case Kind::kToFloat:         // refused above: CUDA accumulators are float already
      case Kind::kStoreTensor:     // refused above
      case Kind::kAddDequantized:  // refused above
      case Kind::kGelu:            // refused above
      case Kind::kGeluTanh:        // refused above
        break;
      case Kind::kToUInt8:  // clipped to the range before: no saturation needed
        v = "(unsigned char)(int)" + v;
        break;
      case Kind::kToInt8:
        v = "(signed char)(int)" + v;
        break;
    }
  }
  return v;
}

std::string float_literal(float v) {
  if (std::isinf(v)) return v > 0 ? "(1.0f / 0.0f)" : "(-1.0f / 0.0f)";
  if (std::isnan(v)) return "(0.0f / 0.0f)";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
  std::string s = text;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

void open_kernel(SourceWriter& src, const ss::Task& task, const ss::ConfigSpace& space,
                 const ss::Config& config, const CudaKernelSource& k, int64_t threads,
                 const CudaKernelOptions& options, const std::string& note,
                 int64_t min_blocks_per_sm) {
  src.line("// " + task.template_name + " " + ss::describe_workload(task.workload) + note);
  src.line("// " + space.describe(config));
  const std::string bounds =
      num(threads) + (min_blocks_per_sm > 0 ? ", " + num(min_blocks_per_sm) : std::string());
  src.open("extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + k.entry +
           kernel_params(options) + " {");
}

void declare_thread_coordinates(SourceWriter& src, int64_t threads_y, int64_t threads_x,
                                int64_t channel_blocks) {
  src.line("const int tz = threadIdx.z, ty = threadIdx.y, tx = threadIdx.x;");
  src.line("const int tid = (tz * " + num(threads_y) + " + ty) * " + num(threads_x) + " + tx;");
  src.line("const int n = blockIdx.z / " + num(channel_blocks) + ";");
}

std::string unroll_pragma(int64_t nest_steps, int64_t auto_unroll_max_step, bool unroll_explicit) {
  if (auto_unroll_max_step == 0 || nest_steps > auto_unroll_max_step) return "#pragma unroll 1";
  return unroll_explicit ? "#pragma unroll" : "";
}

}  // namespace tensortune::codegen::cuda
