#pragma once
/// \file
/// Running one operator on plain-layout inputs (NCHW data, OIHW or (N, K) weights): packs the
/// inputs into the config's layouts, compiles and runs the kernel, unpacks the result.

#include <optional>

#include "compiler/codegen/llvm/kernel.h"
#include "support/tensor.h"

namespace tensortune::measure {

struct OperatorInputs {
  Tensor data;    ///< conv2d: NCHW; dense: (M, K)
  Tensor weight;  ///< conv2d: OIHW; dense: (N, K)
  std::optional<Tensor> bias;
};

/// Checks that the arrays' shapes are the ones the task's workload describes; the message names
/// the array, its shape and the expected one.
Status check_operator_inputs(const schedule_space::Task& task, const OperatorInputs& inputs);

/// Packs data and weight into the kernel's layouts (what the measurer and the compiler do once).
using schedule_space::PackedOperands;
PackedOperands pack_operands(const schedule_space::Task& task,
                             const schedule_space::KernelSignature& sig, const Tensor& data,
                             const Tensor& weight);
/// The kernel output back in the plain layout (NCHW or (M, N)).
Tensor unpack_output(const schedule_space::Task& task, const schedule_space::KernelSignature& sig,
                     const Tensor& out);

/// Compiles and runs the config's kernel: a CPU template's natively on `threads` threads, a
/// CUDA template's in the CPU emulation (codegen/cuda/emulator.h; `threads` unused).
Expected<Tensor> run_operator(const schedule_space::Task& task,
                              const schedule_space::ConfigSpace& space,
                              const schedule_space::Config& config, const OperatorInputs& inputs,
                              int threads, codegen::KernelOptions options = {});

}  // namespace tensortune::measure
