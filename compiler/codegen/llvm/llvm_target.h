#pragma once
/// \file
/// Private to compiler/codegen/llvm: the host target machine and the short optimisation
/// pipeline every kernel module goes through (tuning kernels and whole networks alike).
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/cpu_description.h"
#include "support/error.h"

namespace tensortune::codegen::emit {

/// Registers the native target with LLVM (once per process).
void initialize_llvm();

/// The host CPU with all its features, aggressive code generation.
Expected<llvm::orc::JITTargetMachineBuilder> host_machine_builder();

/// The described CPU (its triple, CPU and features); the host's builder when it is the host.
Expected<llvm::orc::JITTargetMachineBuilder> machine_builder_for(const CpuDescription& cpu);

/// The module (optimised for `tm`) as an ELF object file, or as a file of `type` (assembly text).
Expected<std::string> emit_object_file(llvm::Module& m, llvm::TargetMachine& tm);
Expected<std::string> emit_file(llvm::Module& m, llvm::TargetMachine& tm,
                                llvm::CodeGenFileType type);

/// A JIT for `jtmb` that resolves what kernels call outside themselves (libm's expf, fmaf,
/// fmaxf where the CPU lacks an instruction LLVM would use) from this process.
Expected<std::unique_ptr<llvm::orc::LLJIT>> make_jit(llvm::orc::JITTargetMachineBuilder jtmb);

/// Sets the module's data layout and triple for `tm` and runs our pipeline over it.
void optimize(llvm::Module& m, llvm::TargetMachine& tm);

}  // namespace tensortune::codegen::emit
