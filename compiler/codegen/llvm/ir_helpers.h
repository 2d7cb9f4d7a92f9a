#pragma once
/// \file
/// Private to compiler/codegen/llvm: small helpers for emitting loop nests with IRBuilder.

#include <cstdint>
#include <functional>
#include <string>

#include <llvm/IR/IRBuilder.h>

namespace tensortune::compiler::codegen {

/// Emits `for (iv = lo; iv < hi; ++iv) body(iv)` at the builder's position and leaves the
/// builder after the loop. A loop of constant trip count 1 calls body(lo) with no loop.
void emit_for(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, const std::string& name,
              const std::function<void(llvm::Value*)>& body);

inline llvm::Value* i64(llvm::IRBuilder<>& b, int64_t v) { return b.getInt64(v); }

/// Loads a <width x float> vector (width 1 loads a scalar and wraps it) at base + offset.
llvm::Value* load_vector(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* offset, int width);
void store_vector(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base, llvm::Value* offset,
                  int width);
llvm::Value* load_scalar(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* offset);

/// llvm.fma on vectors of `width` lanes.
llvm::Value* fma(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, llvm::Value* acc);

/// Creates the kernel function with the common ABI and noalias pointer arguments, and
/// attributes that let the backend use the widest vector registers.
llvm::Function* create_kernel_function(llvm::Module& m, const std::string& name, int vector_bits);

/// An alloca in the function's entry block (so that SROA promotes it to registers).
llvm::AllocaInst* entry_alloca(llvm::IRBuilder<>& b, llvm::Type* type, const std::string& name);

}  // namespace tensortune::compiler::codegen
