#pragma once
/// \file
/// Private to compiler/codegen/llvm: small helpers for emitting loop nests with IRBuilder.

#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tensortune::codegen::emit {

using LoopState = std::vector<llvm::Value*>;

/// Emits `for (iv = lo; iv < hi; ++iv) body(iv)` at the builder's position and leaves the
/// builder after the loop. A loop of constant trip count 1 calls body(lo) with no loop.
void emit_for(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, const std::string& name,
              const std::function<void(llvm::Value*)>& body);

/// `for (iv = lo; iv < hi; ++iv) state = body(iv, state)` with the state carried in SSA
/// registers (phi nodes), returning the state after the loop. Trip count 1 inlines the body;
/// a constant trip count of 0 returns `init`.
LoopState emit_for_carried(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi,
                           const std::string& name, const LoopState& init,
                           const std::function<LoopState(llvm::Value*, const LoopState&)>& body);

/// `if (cond) then_body(); else else_body();` (blocks named name.then / name.else), leaving the
/// builder after both: e.g. a tile emitted without bounds checks where they cannot fail.
void emit_if_else(llvm::IRBuilder<>& b, llvm::Value* cond, const std::string& name,
                  const std::function<void()>& then_body, const std::function<void()>& else_body);

/// Integer arithmetic that skips multiplications by 1 and additions of 0, so that the IR we
/// hand to LLVM is small (compile time grows with it). nsw only: offsets may be negative.
llvm::Value* mul_i64(llvm::IRBuilder<>& b, llvm::Value* a, int64_t c);
llvm::Value* add_i64(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* c);
llvm::Value* add_i64(llvm::IRBuilder<>& b, llvm::Value* a, int64_t c);

inline llvm::Value* i64(llvm::IRBuilder<>& b, int64_t v) { return b.getInt64(v); }

/// Loads a <width x float> vector (width 1 loads a scalar and wraps it) at base + offset.
llvm::Value* load_vector(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* offset, int width);
/// Stores `value` (a <width x T> vector, or a scalar) at base + offset counted in elements of
/// its own type T (float, int32, or bytes after an epilogue's kToUInt8/kToInt8).
void store_vector(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base, llvm::Value* offset,
                  int width);
llvm::Value* load_scalar(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* offset);

/// std::max(a, b) and std::min(a, b) as C++ and the interpreter compute them ((a < b) ? b : a,
/// NaN behaviour included): one vmaxps / vminps on x86, where llvm.maxnum / minnum need a NaN
/// fix-up of several instructions.
llvm::Value* max_of(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* c);
llvm::Value* min_of(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* c);

/// llvm.fma on vectors of `width` lanes.
llvm::Value* fma(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, llvm::Value* acc);

/// Creates the kernel function with the common ABI and noalias pointer arguments, and
/// attributes that let the backend use the widest vector registers.
llvm::Function* create_kernel_function(llvm::Module& m, const std::string& name, int vector_bits);

/// Marks `f` nounwind and lets the backend use vectors of `vector_bits` (without this, CPUs
/// whose tuning prefers 256-bit vectors split our 512-bit operations).
void set_vector_attributes(llvm::Function* f, int vector_bits);

/// Creates an exported function with the network ABI of compiler/codegen/llvm/network_kernels.h,
/// void name(const float* const* args, int64_t begin, int64_t end), and places the builder in
/// its entry block.
llvm::Function* create_network_function(llvm::Module& m, llvm::IRBuilder<>& b,
                                        const std::string& name, int vector_bits);

/// Loads args[i] of a network function.
llvm::Value* network_arg(llvm::IRBuilder<>& b, llvm::Function* f, unsigned i);

/// The lane widths covering a block of `block` floats: full vectors of `lanes`, then the rest.
std::vector<int> lane_widths(int64_t block, int lanes);

/// min(max(v, 0), hi - 1) on i64: an index kept inside [0, hi) (taps outside are masked).
llvm::Value* clamp_index(llvm::IRBuilder<>& b, llvm::Value* v, int64_t hi);

/// An alloca in the function's entry block (so that SROA promotes it to registers).
llvm::AllocaInst* entry_alloca(llvm::IRBuilder<>& b, llvm::Type* type, const std::string& name);

}  // namespace tensortune::codegen::emit
