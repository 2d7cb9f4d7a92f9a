// Every registered template keeps the contract of schedule_space/template.h, checked the same
// way for each: a new template gets these checks by being in the list.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/template.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tt::Tensor;

namespace {

// A small workload of the template's operator that it accepts, with padding and odd sizes.
ss::Workload small_workload(const ss::Template& t) {
  switch (t.operator_kind()) {
    case ss::OperatorKind::kConv2d: {
      ss::Conv2dWorkload w = ss::square_conv2d(8, 7, 16, 3, 1);
      w.pad_right = 0;
      w.precision = t.precision();
      if (t.accepts(w)) return w;
      ss::Conv2dWorkload depthwise = ss::square_conv2d(16, 7, 16, 3, 1);
      depthwise.groups = 16;
      depthwise.pad_right = 0;
      return depthwise;
    }
    case ss::OperatorKind::kDense:
      return ss::DenseWorkload{3, 16, 12, t.precision()};
    case ss::OperatorKind::kBatchMatmul:  // w as (B, K, N), N past one vector
      return ss::BatchMatmulWorkload{2, 6, 20, 12, false, t.precision()};
    case ss::OperatorKind::kAttention:  // keys past one vector, values short of one, a mask
      return ss::AttentionWorkload{4, 6, 20, 12, 10, 2, 1, 0.3};
  }
  return ss::DenseWorkload{1, 1, 1};
}

// Operands of the workload's element types: uniform floats, or integers over the whole range.
Tensor operand(tt::DType dtype, const tt::Shape& shape, uint64_t seed) {
  Tensor t = Tensor::zeros(dtype, shape);
  if (tt::is_float(dtype)) {
    tt::fill_uniform(t, seed);
    return t;
  }
  for (size_t i = 0; i < t.i64.size(); ++i)
    t.i64[i] = tt::wrap_integer(dtype, static_cast<int64_t>((i * 2654435761u + seed) >> 7));
  return t;
}

// The target of the template's backend: the host CPU, or a CUDA GPU of compute capability 8.0.
ss::Target target_for(const ss::Template& t) {
  if (t.backend() == "cuda") return ss::Target{ss::cuda_target_spec(80), 1};
  return tt::codegen::host_target();
}

class TemplateContract : public testing::TestWithParam<const ss::Template*> {};

TEST_P(TemplateContract, NamesItsTaskAndCanBeFoundByOp) {
  const ss::Template& t = *GetParam();
  EXPECT_EQ(ss::find_template(t.name()), &t);
  EXPECT_EQ(ss::find_template_by_op(t.name()), &t);
  EXPECT_EQ(ss::find_template_by_op(t.name(), t.backend()), &t);
  EXPECT_EQ(ss::find_template_by_op(t.op_name(), t.backend()), &t);
  if (t.backend() == "cuda") {
    EXPECT_TRUE(tt::codegen::cuda::can_emit_cuda_kernel(t.name()))
        << t.name() << " has no emitter in compiler/codegen/cuda/template_emitters.cc";
  } else {
    EXPECT_EQ(t.backend(), "llvm");
    EXPECT_TRUE(tt::codegen::can_compile_template(t.name()))
        << t.name() << " has no emitter in compiler/codegen/llvm/template_emitters.cc";
  }
}

TEST_P(TemplateContract, SignaturesMatchPackedOperandsAndKernelsMatchTheReference) {
  const ss::Template& t = *GetParam();
  auto task = ss::make_task(std::string(t.name()), small_workload(t), target_for(t));
  ASSERT_TRUE(task.has_value()) << task.error().message;
  auto space = ss::make_config_space(*task);
  ASSERT_TRUE(space.has_value());
  const ss::Config fallback = t.default_config(*task, *space);
  EXPECT_TRUE(space->is_valid(fallback)) << space->describe(fallback);

  const ss::OperandShapes shapes = ss::operand_shapes(task->workload);
  const ss::OperandDTypes dtypes = ss::operand_dtypes(task->workload);
  // Quantized kernels sum into int32 and take no bias.
  const bool quantized = !tt::is_float(dtypes.out);
  tt::measure::OperatorInputs in{
      operand(dtypes.data, shapes.data, 11), operand(dtypes.weight, shapes.weight, 12), {}};
  if (!quantized) in.bias = operand(dtypes.bias, shapes.bias, 13);
  const Tensor want = tt::measure::reference_output(task->workload, in.data, in.weight,
                                                    in.bias ? &*in.bias : nullptr);
  ASSERT_EQ(want.shape, shapes.out);

  int checked = 0;
  // The fallback, then from each of 12 evenly spaced indices the first valid config at or after
  // it (before the next): a space whose valid points cluster (tensor-core stages) has some.
  const int64_t step = 1 + space->size() / 12;
  for (int64_t from = 0; from < space->size() && checked < 12; from += step) {
    int64_t i = from;
    if (from > 0)
      while (i < std::min(from + step, space->size()) && !space->is_valid_index(i)) ++i;
    if (i >= space->size()) break;
    const ss::Config c = from == 0 ? fallback : *space->config_at(i);
    if (!space->is_valid(c)) continue;
    EXPECT_EQ(t.features(*task, *space, c).size(), t.feature_names().size());
    const ss::KernelSignature sig = t.signature(*task, *space, c);
    EXPECT_GT(sig.parallel_extent, 0);
    const ss::PackedOperands packed = t.pack_operands(sig, in.data, in.weight);
    EXPECT_EQ(packed.data.shape, sig.data_shape);
    EXPECT_EQ(packed.weight.shape, sig.weight_shape);
    const Tensor out = t.output_from_plain(sig, want);
    EXPECT_EQ(out.shape, sig.out_shape);
    EXPECT_EQ(t.output_to_plain(sig, out).f32, want.f32);
    EXPECT_EQ(t.output_to_plain(sig, out).i64, want.i64);

    auto got = tt::measure::run_operator(*task, *space, c, in, 2);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    ASSERT_EQ(got->shape, want.shape);
    ASSERT_EQ(got->i64, want.i64);  // integer outputs: exact
    for (size_t j = 0; j < want.f32.size(); ++j)
      ASSERT_NEAR(got->f32[j], want.f32[j], 1e-4 * (1 + std::fabs(want.f32[j])))
          << space->describe(c) << " element " << j;
    ++checked;
  }
  EXPECT_GE(checked, std::min<int64_t>(3, space->size()));  // dense_int8 on M = 3: 2 configs
}

INSTANTIATE_TEST_SUITE_P(Registered, TemplateContract, testing::ValuesIn(ss::all_templates()),
                         [](const testing::TestParamInfo<const ss::Template*>& info) {
                           std::string name(info.param->name());
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
