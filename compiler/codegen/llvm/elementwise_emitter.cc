// Element-wise chains: the parallel loop runs over rows (every axis but the last), the last
// axis is vectorised with a scalar tail. With numpy broadcasting of row-major operands, an
// operand's stride along the last axis is 1 or 0, so each operand is either a vector load or a
// scalar loaded once per row and splat.
#include <llvm/IR/Module.h>

#include <cmath>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/float_math.h"
#include "compiler/codegen/llvm/ir_helpers.h"

namespace tensortune::codegen::emit {
namespace {

using Op = ElementwiseInstr::Op;

class ElementwiseEmitter {
 public:
  ElementwiseEmitter(llvm::IRBuilder<>& b, const ElementwiseKernelSpec& spec, int lanes)
      : b_(b), spec_(spec), lanes_(lanes) {
    shape_ = spec.out_shape.empty() ? std::vector<int64_t>{1} : spec.out_shape;
    strides_ = spec.operand_strides;
    for (auto& s : strides_)
      if (s.empty()) s = {0};
    row_length_ = shape_.back();
  }

  void emit(llvm::Value* out, const std::vector<llvm::Value*>& operands, llvm::Value* begin,
            llvm::Value* end) {
    out_ = out;
    operands_ = operands;
    emit_for(b_, begin, end, "row", [&](llvm::Value* row) {
      // Offsets of this row in every operand: mixed radix over the outer axes.
      std::vector<llvm::Value*> offsets(operands_.size(), i64(b_, 0));
      llvm::Value* rest = row;
      for (int d = static_cast<int>(shape_.size()) - 2; d >= 0; --d) {
        llvm::Value* index = rest;
        if (d > 0) {
          index = b_.CreateSRem(rest, i64(b_, shape_[d]));
          rest = b_.CreateSDiv(rest, i64(b_, shape_[d]));
        }
        for (size_t k = 0; k < operands_.size(); ++k)
          offsets[k] = add_i64(b_, offsets[k], mul_i64(b_, index, strides_[k][d]));
      }
      row_offsets_ = offsets;
      out_row_ = mul_i64(b_, row, row_length_);
      scalars_.assign(operands_.size(), nullptr);
      for (size_t k = 0; k < operands_.size(); ++k)
        if (strides_[k].back() == 0) scalars_[k] = load_scalar(b_, operands_[k], offsets[k]);
      const int64_t full = row_length_ / lanes_ * lanes_;
      if (full > 0) {
        emit_for(b_, i64(b_, 0), i64(b_, full / lanes_), "vec",
                 [&](llvm::Value* i) { emit_point(mul_i64(b_, i, lanes_), lanes_); });
      }
      if (full < row_length_)
        emit_for(b_, i64(b_, full), i64(b_, row_length_), "tail",
                 [&](llvm::Value* j) { emit_point(j, 1); });
    });
  }

 private:
  llvm::Value* operand(int k, llvm::Value* j, int width) {
    if (scalars_[k]) return width == 1 ? scalars_[k] : b_.CreateVectorSplat(width, scalars_[k]);
    llvm::Value* offset = add_i64(b_, row_offsets_[k], j);
    return width == 1 ? load_scalar(b_, operands_[k], offset)
                      : load_vector(b_, operands_[k], offset, width);
  }

  llvm::Value* constant(llvm::Type* type, double c) { return llvm::ConstantFP::get(type, c); }

  llvm::Value* min_of(llvm::Value* a, llvm::Value* b) { return emit::min_of(b_, a, b); }
  llvm::Value* max_of(llvm::Value* a, llvm::Value* b) { return emit::max_of(b_, a, b); }

  llvm::Value* exp_f32(llvm::Value* x) { return emit::exp_f32(b_, x); }
  llvm::Value* erf_f32(llvm::Value* x) { return emit::erf_f32(b_, x); }
  llvm::Value* tanh_f32(llvm::Value* x) { return emit::tanh_f32(b_, x); }
  llvm::Value* gelu_f32(llvm::Value* x, bool tanh_form) { return emit::gelu_f32(b_, x, tanh_form); }

  // f(x) in double through the C library, lane by lane: exp, log and the functions built on
  // them, bit for bit the interpreter's (graph/math_kernels.cc).
  llvm::Value* libm(const char* name, llvm::Value* xd) {
    llvm::Module* m = b_.GetInsertBlock()->getModule();
    llvm::Type* d = b_.getDoubleTy();
    llvm::FunctionCallee f = m->getOrInsertFunction(name, llvm::FunctionType::get(d, {d}, false));
    if (!xd->getType()->isVectorTy()) return b_.CreateCall(f, {xd});
    const unsigned n = llvm::cast<llvm::FixedVectorType>(xd->getType())->getNumElements();
    llvm::Value* r = llvm::UndefValue::get(xd->getType());
    for (unsigned i = 0; i < n; ++i)
      r = b_.CreateInsertElement(r, b_.CreateCall(f, {b_.CreateExtractElement(xd, i)}), i);
    return r;
  }

  llvm::Value* transcendental(const ElementwiseInstr& in, llvm::Value* x, int width) {
    llvm::Type* t = x->getType();
    llvm::Type* dt =
        width == 1 ? b_.getDoubleTy()
                   : static_cast<llvm::Type*>(llvm::FixedVectorType::get(b_.getDoubleTy(), width));
    llvm::Value* xd = b_.CreateFPExt(x, dt);
    auto c = [&](double v) { return constant(dt, v); };
    // softplus(x) = x > 30 ? x : log1p(exp(x)), as the interpreter has it.
    auto softplus = [&](llvm::Value* v) {
      return b_.CreateSelect(b_.CreateFCmpOGT(v, c(30)), v, libm("log1p", libm("exp", v)));
    };
    llvm::Value* r = nullptr;
    switch (in.op) {
      case Op::kLog:
        r = libm("log", xd);
        break;
      case Op::kSoftplus:
        r = softplus(xd);
        break;
      case Op::kMish:
        r = b_.CreateFMul(xd, libm("tanh", softplus(xd)));
        break;
      case Op::kElu:
        r = b_.CreateSelect(b_.CreateFCmpOLT(xd, c(0)), b_.CreateFMul(c(in.p0), libm("expm1", xd)),
                            xd);
        break;
      case Op::kSelu:
        r = b_.CreateFMul(c(in.p1),
                          b_.CreateSelect(b_.CreateFCmpOLE(xd, c(0)),
                                          b_.CreateFMul(c(in.p0), libm("expm1", xd)), xd));
        break;
      // The rest compute in float (emit_point).
      case Op::kExp:
      case Op::kErf:
      case Op::kTanh:
      case Op::kGelu:
      case Op::kRelu:
      case Op::kClip:
      case Op::kSigmoid:
      case Op::kHardSigmoid:
      case Op::kHardSwish:
      case Op::kAdd:
      case Op::kSubtract:
      case Op::kMultiply:
      case Op::kDivide:
      case Op::kIdentity:
      case Op::kSqrt:
      case Op::kNeg:
      case Op::kAbs:
      case Op::kFloor:
      case Op::kCeil:
      case Op::kRound:
      case Op::kReciprocal:
      case Op::kLeakyRelu:
        TT_CHECK(false) << "instruction " << static_cast<int>(in.op) << " is not a double one";
    }
    return b_.CreateFPTrunc(r, t);
  }

  void emit_point(llvm::Value* j, int width) {
    std::vector<llvm::Value*> results;
    auto get = [&](int ref) {
      return ref >= 0 ? operand(ref, j, width) : results.at(static_cast<size_t>(-1 - ref));
    };
    for (const ElementwiseInstr& in : spec_.program) {
      llvm::Value* x = get(in.a);
      llvm::Type* t = x->getType();
      llvm::Value* r = nullptr;
      switch (in.op) {
        case Op::kRelu:
          r = b_.CreateSelect(b_.CreateFCmpOGT(x, constant(t, 0)), x, constant(t, 0));
          break;
        case Op::kClip:
          r = min_of(max_of(x, constant(t, in.p0)), constant(t, in.p1));
          break;
        case Op::kSigmoid:
          r = b_.CreateFDiv(constant(t, 1),
                            b_.CreateFAdd(constant(t, 1), exp_f32(b_.CreateFNeg(x))));
          break;
        case Op::kHardSigmoid: {
          llvm::Value* y = b_.CreateFAdd(b_.CreateFMul(constant(t, in.p0), x), constant(t, in.p1));
          r = max_of(constant(t, 0), min_of(constant(t, 1), y));
          break;
        }
        case Op::kHardSwish: {
          llvm::Value* y = b_.CreateFAdd(b_.CreateFDiv(x, constant(t, 6)), constant(t, 0.5));
          r = b_.CreateFMul(x, max_of(constant(t, 0), min_of(constant(t, 1), y)));
          break;
        }
        case Op::kIdentity:
          r = x;
          break;
        case Op::kAdd:
          r = b_.CreateFAdd(x, get(in.b));
          break;
        case Op::kSubtract:
          r = b_.CreateFSub(x, get(in.b));
          break;
        case Op::kMultiply:
          r = b_.CreateFMul(x, get(in.b));
          break;
        case Op::kDivide:
          r = b_.CreateFDiv(x, get(in.b));
          break;
        case Op::kSqrt:
          r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
          break;
        case Op::kFloor:
          r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
          break;
        case Op::kCeil:
          r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
          break;
        case Op::kRound:
          r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
          break;
        case Op::kAbs:
          r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
          break;
        case Op::kNeg:
          r = b_.CreateFNeg(x);
          break;
        case Op::kReciprocal:
          r = b_.CreateFDiv(constant(t, 1), x);
          break;
        case Op::kLeakyRelu:
          r = b_.CreateSelect(b_.CreateFCmpOLT(x, constant(t, 0)),
                              b_.CreateFMul(x, constant(t, in.p0)), x);
          break;
        case Op::kExp:
          r = exp_f32(x);
          break;
        case Op::kErf:
          r = erf_f32(x);
          break;
        case Op::kTanh:
          r = tanh_f32(x);
          break;
        case Op::kGelu:
          r = gelu_f32(x, in.p0 != 0);
          break;
        case Op::kLog:
        case Op::kSoftplus:
        case Op::kMish:
        case Op::kElu:
        case Op::kSelu:
          r = transcendental(in, x, width);
          break;
      }
      results.push_back(r);
    }
    llvm::Value* offset = add_i64(b_, out_row_, j);
    if (spec_.out_dtype != DType::kFloat32) {
      store_bytes(results.back(), offset, width);
      return;
    }
    if (width == 1) {
      b_.CreateAlignedStore(results.back(), b_.CreateInBoundsGEP(b_.getFloatTy(), out_, offset),
                            llvm::Align(4));
    } else {
      store_vector(b_, results.back(), out_, offset, width);
    }
  }

  // A quantizing cast's store, as the graph's Cast: NaN gives 0, toward zero saturated to int64
  // (llvm.fptosi.sat does both), then wrapped to the byte. Behind a clip whose bounds lie in
  // int32 (a quantization's saturation) the values need no saturation.
  void store_bytes(llvm::Value* value, llvm::Value* offset, int width) {
    const bool int32_range = spec_.cast_input_bounded;
    llvm::Type* integer = int32_range ? b_.getInt32Ty() : b_.getInt64Ty();
    llvm::Type* i8t = b_.getInt8Ty();
    llvm::Type* wide = width == 1 ? integer : llvm::FixedVectorType::get(integer, width);
    llvm::Type* bytes = width == 1 ? i8t : llvm::FixedVectorType::get(i8t, width);
    llvm::Value* v = nullptr;
    if (int32_range) {  // NaN to 0, then a plain conversion (llvm.fptosi.sat is scalarised)
      llvm::Value* zero = llvm::Constant::getNullValue(value->getType());
      v = b_.CreateFPToSI(b_.CreateSelect(b_.CreateFCmpORD(value, value), value, zero), wide);
    } else {
      v = b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {wide, value->getType()}, {value});
    }
    v = b_.CreateTrunc(v, bytes);
    llvm::Value* ptr =
        b_.CreateInBoundsGEP(i8t, b_.CreateBitCast(out_, i8t->getPointerTo()), offset);
    b_.CreateAlignedStore(v, b_.CreateBitCast(ptr, bytes->getPointerTo()), llvm::Align(1));
  }

  llvm::IRBuilder<>& b_;
  const ElementwiseKernelSpec& spec_;
  int lanes_;
  std::vector<int64_t> shape_;
  std::vector<std::vector<int64_t>> strides_;
  int64_t row_length_ = 1;
  llvm::Value* out_ = nullptr;
  std::vector<llvm::Value*> operands_, row_offsets_, scalars_;
  llvm::Value* out_row_ = nullptr;
};

}  // namespace

void emit_elementwise(llvm::Module& m, const std::string& name, const ElementwiseKernelSpec& spec,
                      int lanes) {
  llvm::IRBuilder<> b(m.getContext());
  llvm::Function* f = create_network_function(m, b, name, lanes * 32);
  llvm::Value* out = network_arg(b, f, 0);
  std::vector<llvm::Value*> operands;
  for (size_t k = 0; k < spec.operand_strides.size(); ++k)
    operands.push_back(network_arg(b, f, static_cast<unsigned>(k + 1)));
  ElementwiseEmitter(b, spec, lanes).emit(out, operands, f->getArg(1), f->getArg(2));
  b.CreateRetVoid();
}

}  // namespace tensortune::codegen::emit
