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

namespace {

// x * p(x^2) / q(x^2) on x clamped to [-bound, bound], NaN passed through: the form of the
// float erf and tanh below, whole vectors at a time (where the C library's double functions
// go lane by lane).
llvm::Value* odd_rational(llvm::IRBuilder<>& b, llvm::Value* x, double bound,
                          std::initializer_list<double> p, std::initializer_list<double> q) {
  llvm::Type* t = x->getType();
  llvm::Value* c = min_of(b, max_of(b, x, constant(t, -bound)), constant(t, bound));
  llvm::Value* c2 = b.CreateFMul(c, c);
  llvm::Value* r = b.CreateFDiv(b.CreateFMul(c, horner(b, c2, p)), horner(b, c2, q));
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

}  // namespace

llvm::Value* erf_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  return odd_rational(
      b, x, 4.0,
      {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
       -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02},
      {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
       -1.42647390514189e-02});
}

llvm::Value* tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Value* r = odd_rational(
      b, x, 7.90531110763549805,
      {-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
       1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03},
      {1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03});
  llvm::Value* tiny =
      b.CreateFCmpOLT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), constant(t, 0.0004));
  return b.CreateSelect(tiny, x, r);
}

llvm::Value* gelu_f32(llvm::IRBuilder<>& b, llvm::Value* x, bool tanh_form) {
  llvm::Type* t = x->getType();
  llvm::Value* arg;
  llvm::Value* inner;
  double bound;
  if (tanh_form) {
    llvm::Value* cube = b.CreateFMul(b.CreateFMul(x, x), x);
    arg = b.CreateFMul(constant(t, std::sqrt(2.0 / M_PI)), fma(b, constant(t, 0.044715), cube, x));
    inner = tanh_f32(b, arg);
    bound = -7.90531110763549805;
  } else {
    arg = b.CreateFMul(x, constant(t, M_SQRT1_2));
    inner = erf_f32(b, arg);
    bound = -4.0;
  }
  llvm::Value* r =
      b.CreateFMul(b.CreateFMul(constant(t, 0.5), x), b.CreateFAdd(constant(t, 1), inner));
  return b.CreateSelect(b.CreateFCmpOLE(arg, constant(t, bound)), b.CreateFMul(x, constant(t, 0)),
                        r);
}

}  // namespace tensortune::codegen::emit
