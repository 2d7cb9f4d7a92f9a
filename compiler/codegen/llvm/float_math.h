#pragma once
/// \file
/// Private to compiler/codegen/llvm: float math as whole-vector IR (where the C library's double
/// functions go lane by lane), for the element-wise and row kernels and the anchors' epilogues.

#include <llvm/IR/IRBuilder.h>

#include <initializer_list>

namespace tensortune::codegen::emit {

/// p(x) by Horner's rule in fused multiply-adds, coefficients from the highest power down; x a
/// float or a vector of floats.
llvm::Value* horner(llvm::IRBuilder<>& b, llvm::Value* x,
                    std::initializer_list<double> coefficients);

/// exp in float: 2^n e^r with n = round(x / ln 2) and r = x - n ln 2 (ln 2 in two parts, so
/// that r is exact), e^r by its Taylor polynomial of degree 7 (|r| <= ln 2 / 2), 2^n by
/// building the float's exponent. Against the double exp over [-86, 88.72]: at most 7.9e-8
/// relative; beyond, 0 (below 4.4e-38) or infinity; NaN passes through.
llvm::Value* exp_f32(llvm::IRBuilder<>& b, llvm::Value* x);

/// erf in float: a rational approximation on [-4, 4] (beyond it erf rounds to +-1 in float).
/// Against the double erf over [-40, 40] in steps of 1e-5: at most 3.3e-7 absolute.
llvm::Value* erf_f32(llvm::IRBuilder<>& b, llvm::Value* x);

/// tanh in float: a rational approximation on [-7.9053, 7.9053] (+-1 in float beyond), x itself
/// below 4e-4. Against the double tanh over [-40, 40]: at most 2.8e-7 absolute.
llvm::Value* tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x);

/// GELU in float: 0.5 x (1 + erf(x / sqrt 2)), or with `tanh_form` 0.5 x (1 + tanh(sqrt(2/pi)
/// (x + 0.044715 x^3))); over [-40, 40] within 1.1e-6 (erf) and 6.6e-7 (tanh) of the double
/// formula, relative to max(1, |gelu|). Where the argument passes the approximation's lower
/// bound, 1 + erf (or 1 + tanh) is below its error, which x would multiply: the result there is
/// 0 (the true one is under 1e-6). The element-wise kernels' and the anchors' epilogues' GELU.
llvm::Value* gelu_f32(llvm::IRBuilder<>& b, llvm::Value* x, bool tanh_form);

}  // namespace tensortune::codegen::emit
