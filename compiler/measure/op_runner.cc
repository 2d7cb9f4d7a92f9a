#include "compiler/measure/op_runner.h"

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/cuda/emulator.h"
#include "support/aligned_buffer.h"

namespace tensortune::measure {
using codegen::compile_kernel;
using codegen::CompiledKernel;
using codegen::KernelOptions;
using schedule_space::KernelSignature;

namespace ss = schedule_space;

namespace {

Status expect_shape(const char* what, const Tensor& a, const std::vector<int64_t>& want) {
  if (a.shape != want)
    return invalid_argument(std::string(what) + " has shape " + shape_to_string(a.shape) +
                            ", the workload needs " + shape_to_string(want));
  return ok_status();
}

}  // namespace

Status check_operator_inputs(const ss::Task& task, const OperatorInputs& in) {
  const ss::OperandShapes want = ss::operand_shapes(task.workload);
  TT_RETURN_IF_ERROR(expect_shape("data", in.data, want.data));
  TT_RETURN_IF_ERROR(expect_shape("weight", in.weight, want.weight));
  if (in.bias) TT_RETURN_IF_ERROR(expect_shape("bias", *in.bias, want.bias));
  return ok_status();
}

PackedOperands pack_operands(const ss::Task& task, const KernelSignature& sig, const Tensor& data,
                             const Tensor& weight) {
  return ss::template_of(task).pack_operands(sig, data, weight);
}

Tensor unpack_output(const ss::Task& task, const KernelSignature& sig, const Tensor& out) {
  return ss::template_of(task).output_to_plain(sig, out);
}

namespace {

// A CUDA template's kernel, emulated on the CPU (codegen/cuda/emulator.h).
Expected<Tensor> run_emulated(const ss::Task& task, const ss::ConfigSpace& space,
                              const ss::Config& config, const OperatorInputs& inputs,
                              const KernelOptions& options) {
  const auto cuda_options = codegen::cuda::CudaKernelOptions::bias_relu(options.bias, options.relu);
  TT_ASSIGN_OR_RETURN(auto source,
                      codegen::cuda::emit_cuda_kernel(task, space, config, cuda_options));
  TT_ASSIGN_OR_RETURN(auto kernel, codegen::cuda::compile_for_emulation(source));
  const KernelSignature& sig = source.signature;
  PackedOperands packed = pack_operands(task, sig, inputs.data, inputs.weight);
  Tensor out = Tensor::zeros(sig.out_shape);
  std::vector<const float*> operands;
  if (options.bias) operands.push_back(inputs.bias->f32.data());
  TT_RETURN_IF_ERROR(
      kernel.launch(packed.data.f32.data(), packed.weight.f32.data(), out.f32.data(), operands));
  return unpack_output(task, sig, out);
}

}  // namespace

Expected<Tensor> run_operator(const ss::Task& task, const ss::ConfigSpace& space,
                              const ss::Config& config, const OperatorInputs& inputs, int threads,
                              KernelOptions options) {
  TT_RETURN_IF_ERROR(check_operator_inputs(task, inputs));
  options.bias = inputs.bias.has_value();
  if (ss::template_of(task).target_kind().runs_on_gpu())
    return run_emulated(task, space, config, inputs, options);
  const ss::OperandDTypes dtypes = ss::operand_dtypes(task.workload);
  if (options.bias && !is_float(dtypes.out))
    return invalid_argument("bias: " + ss::describe_workload(task.workload) +
                            " is quantized and its kernel takes no bias (it sums into int32)");
  if (inputs.data.dtype != dtypes.data || inputs.weight.dtype != dtypes.weight)
    return invalid_argument(std::string("data and weight are ") + dtype_name(inputs.data.dtype) +
                            " and " + dtype_name(inputs.weight.dtype) + "; the workload needs " +
                            dtype_name(dtypes.data) + " and " + dtype_name(dtypes.weight));
  if (const ss::Precision p = ss::precision_of(task.workload); ss::is_quantized(p)) {
    // A narrower precision's kernel is exact only on weights within its range.
    const ss::IntRange range = ss::weight_range(p);
    for (size_t i = 0; i < inputs.weight.i64.size(); ++i)
      if (inputs.weight.i64[i] < range.lo || inputs.weight.i64[i] > range.hi)
        return invalid_argument("weight[" + std::to_string(i) +
                                "] = " + std::to_string(inputs.weight.i64[i]) + " is outside [" +
                                std::to_string(range.lo) + ", " + std::to_string(range.hi) +
                                "], the range of " + ss::precision_name(p));
  }
  TT_ASSIGN_OR_RETURN(CompiledKernel kernel, compile_kernel(task, space, config, options));
  const KernelSignature& sig = kernel.signature();
  PackedOperands packed = pack_operands(task, sig, inputs.data, inputs.weight);
  AlignedBuffer data = AlignedBuffer::of(packed.data), weight = AlignedBuffer::of(packed.weight);
  AlignedBuffer bias(inputs.bias ? inputs.bias->f32 : std::vector<float>{});
  AlignedBuffer out_buf(num_elements(sig.out_shape));  // float32 or int32: 4 bytes each
  ThreadPool pool(threads);
  kernel.run(data.data(), weight.data(), options.bias ? bias.data() : nullptr, out_buf.data(),
             pool);
  return unpack_output(task, sig, out_buf.read(dtypes.out, sig.out_shape));
}

}  // namespace tensortune::measure
