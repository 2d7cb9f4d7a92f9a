#include "compiler/codegen/llvm/float_math.h"

#include <cmath>

#include "compiler/codegen/llvm/ir_helpers.h"

namespace tensortune::codegen::emit {
namespace {

llvm::Value* constant(llvm::Type* type, double c) { return llvm::ConstantFP::get(type, c); }

}  // namespace

llvm::Value* horner(llvm::IRBuilder<>& b, llvm::Value* x,
                    std::initializer_list<double> coefficients) {
  llvm::Type* t = x->getType();
  auto it = coefficients.begin();
  llvm::Value* p = constant(t, *it++);
  for (; it != coefficients.end(); ++it) p = fma(b, x, p, constant(t, *it));
  return p;
}

llvm::Value* exp_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Type* i32 =
      t->isVectorTy() ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(
                            b.getInt32Ty(), llvm::cast<llvm::FixedVectorType>(t)->getNumElements()))
                      : b.getInt32Ty();
  const double lo = -86.0, hi = 88.7228;
  llvm::Value* c = min_of(b, max_of(b, x, constant(t, lo)), constant(t, hi));
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven,
                                          b.CreateFMul(c, constant(t, 1.44269504088896341)));
  llvm::Value* r = fma(b, n, constant(t, -0.693359375), c);
  r = fma(b, n, constant(t, 2.12194440e-4), r);
  llvm::Value* p = horner(b, r, {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1, 1});
  // 2^(n - 1), then times 2: n = 128 (x near the top) has no float exponent of its own.
  llvm::Value* bits =
      b.CreateShl(b.CreateAdd(b.CreateFPToSI(n, i32), llvm::ConstantInt::get(i32, 126)), 23);
  llvm::Value* e = b.CreateFMul(b.CreateFMul(p, b.CreateBitCast(bits, t)), constant(t, 2));
  e = b.CreateSelect(b.CreateFCmpOGT(x, constant(t, hi)), constant(t, INFINITY), e);
  e = b.CreateSelect(b.CreateFCmpOLT(x, constant(t, lo)), constant(t, 0), e);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, e);
}

}  // namespace tensortune::codegen::emit
