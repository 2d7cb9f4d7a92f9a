#pragma once
/// \file
/// Plain reference implementations: the trusted oracles every generated kernel is checked
/// against. Straight loops with double accumulation; speed is not their job. A reduced float
/// precision (tf32, float16, bfloat16) rounds data and weight as its kernels' products take
/// them (schedule_space::round_to_precision) and sums in double as float32 does.

#include "schedule_space/workload.h"
#include "support/tensor.h"

namespace tensortune::measure {

/// NCHW data [N, IC, H, W], OIHW weight [OC, IC, KH, KW], optional bias [OC] (may be null)
/// -> NCHW output. Any stride, dilation and four-sided zero padding. A quantized workload
/// (Precision::kUInt8Int8) takes uint8 data, int8 weights and an int32 bias, and sums
/// exactly into an int32 output.
Tensor conv2d_nchw_reference(const Tensor& data, const Tensor& weight, const Tensor* bias,
                             const schedule_space::Conv2dWorkload& w);

/// data [M, K], weight [N, K], optional bias [N] -> [M, N]; quantized (Precision::kUInt8Int8):
/// uint8 data, int8 weight, int32 bias, summed exactly into int32.
Tensor dense_reference(const Tensor& data, const Tensor& weight, const Tensor* bias,
                       const schedule_space::DenseWorkload& w);

/// data [B, M, K], weight [B, N, K] (transpose_b) or [B, K, N], optional bias [N] -> [B, M, N].
Tensor batch_matmul_reference(const Tensor& data, const Tensor& weight, const Tensor* bias,
                              const schedule_space::BatchMatmulWorkload& w);

/// q [B, M, K] and the weight buffer of operand_shapes (k^T [B, K, N], v [B, N, Dv], the mask)
/// and an optional bias [Dv] (may be null) added last -> [B, M, Dv]: each score summed in double,
/// the softmax in double, its product with v too.
Tensor attention_reference(const Tensor& q, const Tensor& operands, const Tensor* bias,
                           const schedule_space::AttentionWorkload& w);

/// The reference of any workload (plain layouts, see schedule_space::operand_shapes).
Tensor reference_output(const schedule_space::Workload& w, const Tensor& data, const Tensor& weight,
                        const Tensor* bias);

}  // namespace tensortune::measure
