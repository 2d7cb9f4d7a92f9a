#pragma once
/// \file
/// Private to compiler/codegen/llvm: float math as whole-vector IR (where the C library's double
/// functions go lane by lane), for the element-wise and row kernels.

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

}  // namespace tensortune::codegen::emit
