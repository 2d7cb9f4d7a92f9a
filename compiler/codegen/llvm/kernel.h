#pragma once
/// \file
/// Compiling one (task, config) pair to machine code for the host CPU, and running it.
///
/// Every generated kernel has one ABI:
///   void kernel(const float* data, const float* weight, const float* bias, float* out,
///               int64_t begin, int64_t end)
/// in the template's layouts (see schedule_space::KernelSignature); it computes the slice
/// [begin, end) of its outer fused parallel loop, so a thread pool runs one slice per thread.
/// LLVM stays behind this header: nothing here includes it.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/codegen/llvm/cpu_description.h"
#include "schedule_space/config_space.h"
#include "schedule_space/task.h"
#include "schedule_space/template.h"
#include "support/error.h"
#include "support/thread_pool.h"

namespace tensortune::codegen {

/// Fused epilogues. Tuning measures the bare operator; compiled networks add these.
struct KernelOptions {
  bool bias = false;  ///< add bias[oc] (conv2d) or bias[n] (dense)
  bool relu = false;  ///< max(x, 0) after the bias
};

using KernelFn = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t);

/// Buffer shapes in the kernel's layouts, and its parallel loop extent (the template's).
using schedule_space::KernelSignature;

class CompiledKernel {
 public:
  const KernelSignature& signature() const;
  KernelFn function() const;
  double compile_seconds() const;
  /// Runs the whole kernel, splitting the parallel loop evenly over the pool's threads.
  void run(const float* data, const float* weight, const float* bias, float* out,
           ThreadPool& pool) const;

  struct Impl;
  explicit CompiledKernel(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Impl> impl_;
};

/// The template's signature of the config. Fails (kFailedPrecondition, INSTANTIATION_ERROR
/// when measuring) for a config the template marks invalid.
Expected<KernelSignature> kernel_signature(const schedule_space::Task& task,
                                           const schedule_space::ConfigSpace& space,
                                           const schedule_space::Config& config);

/// Whether this build can generate code for the template (its backend's emitter list names it).
bool can_compile_template(std::string_view template_name);

/// Emits LLVM IR, optimises it (a short pass pipeline, see codegen/llvm/llvm_target.cc) and
/// JIT-compiles it for the host CPU with ORC. kFailedPrecondition: the config is invalid;
/// kUnimplemented: the template has no emitter here; kInternal: LLVM failed.
Expected<CompiledKernel> compile_kernel(const schedule_space::Task& task,
                                        const schedule_space::ConfigSpace& space,
                                        const schedule_space::Config& config,
                                        const KernelOptions& options = {});

/// The same kernel as an ELF object for `cpu` (symbol "kernel"): what a builder ships to a
/// device server that accepts built code. Errors as compile_kernel's.
Expected<std::string> compile_kernel_object(const schedule_space::Task& task,
                                            const schedule_space::ConfigSpace& space,
                                            const schedule_space::Config& config,
                                            const CpuDescription& cpu);

/// The same kernel as assembly text for `cpu`, with LLVM's "Spill" and "Reload" comments on
/// the instructions that move a register to the stack and back: how a register tile that is too
/// large for the CPU shows itself.
Expected<std::string> kernel_assembly(const schedule_space::Task& task,
                                      const schedule_space::ConfigSpace& space,
                                      const schedule_space::Config& config,
                                      const CpuDescription& cpu);

/// Links an object from compile_kernel_object into this process (kInvalidArgument when it does
/// not load or has no "kernel"); `signature` is the config's (kernel_signature).
Expected<CompiledKernel> load_kernel_object(const std::string& object_code,
                                            const KernelSignature& signature);

/// "LLVM 14.0.6": the compiler a built kernel names.
std::string llvm_version();

/// The LLVM IR text of the kernel, before or after optimisation (for --print-ir and tests).
Expected<std::string> kernel_ir(const schedule_space::Task& task,
                                const schedule_space::ConfigSpace& space,
                                const schedule_space::Config& config, const KernelOptions& options,
                                bool optimized);

/// The host as a code generation target: "llvm -keys=cpu -mcpu=<host cpu>", its widest
/// float32 vector (16 lanes with AVX-512F, 8 with AVX, else 4) and its measured kernel model.
schedule_space::Target host_target();

/// The host CPU's kernel model (schedule_space/cpu_model.h): the table's for its LLVM name,
/// with the FMA chains and one core's peak measured by the FMA probe (a few milliseconds, once
/// per process) and the cache sizes the kernel reports.
schedule_space::CpuModel host_cpu_model();

/// Device key for records: "x86-avx512", "x86-avx2", "x86-sse" (or "<arch>-cpu").
std::string host_device_key();

/// Whether the host multiplies 8-bit integers into int32 sums in one instruction (AVX-512 VNNI):
/// without it, int8 kernels of full-range weights widen their operands to int16.
bool host_has_int8_dot();

/// Whether int8 kernels built here run on AMX tiles: the CPU has them and Linux granted this
/// process their state.
bool host_has_amx_int8();

}  // namespace tensortune::codegen
