// Fused epilogues and the two function ABIs of anchor kernels (tuning and network).
#include <llvm/IR/Module.h>

#include <cmath>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/float_math.h"
#include "compiler/codegen/llvm/ir_helpers.h"

namespace tensortune::codegen::emit {

std::vector<epilogue::EpilogueOp> epilogue_of(const KernelOptions& options) {
  std::vector<epilogue::EpilogueOp> ops;
  if (options.bias) ops.push_back({epilogue::EpilogueOp::Kind::kAddChannel, 0});
  if (options.relu) ops.push_back({epilogue::EpilogueOp::Kind::kRelu});
  return ops;
}

AnchorArgs begin_anchor_function(llvm::Module& m, llvm::IRBuilder<>& b, const std::string& name,
                                 int lanes, bool network, size_t operands) {
  AnchorArgs args;
  if (!network) {
    llvm::Function* f = create_kernel_function(m, name, lanes * 32);
    b.SetInsertPoint(llvm::BasicBlock::Create(m.getContext(), "entry", f));
    args.data = f->getArg(0);
    args.weight = f->getArg(1);
    args.operands = {f->getArg(2)};
    args.out = f->getArg(3);
    args.begin = f->getArg(4);
    args.end = f->getArg(5);
    return args;
  }
  // The exported wrapper unpacks the argument array and calls a body whose pointer arguments
  // are noalias, which the optimiser needs to keep weights and inputs in registers.
  llvm::LLVMContext& ctx = m.getContext();
  auto* fptr = llvm::Type::getFloatPtrTy(ctx);
  auto* i64t = llvm::Type::getInt64Ty(ctx);
  std::vector<llvm::Type*> params(3 + operands, fptr);
  params.push_back(i64t);
  params.push_back(i64t);
  auto* body_type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
  auto* body =
      llvm::Function::Create(body_type, llvm::Function::InternalLinkage, name + ".body", m);
  for (unsigned i = 0; i < 3 + operands; ++i) body->addParamAttr(i, llvm::Attribute::NoAlias);
  set_vector_attributes(body, lanes * 32);

  llvm::Function* wrapper = create_network_function(m, b, name, lanes * 32);
  std::vector<llvm::Value*> call_args;
  for (unsigned i = 0; i < 3 + operands; ++i) call_args.push_back(network_arg(b, wrapper, i));
  call_args.push_back(wrapper->getArg(1));
  call_args.push_back(wrapper->getArg(2));
  b.CreateCall(body, call_args);
  b.CreateRetVoid();

  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", body));
  args.data = body->getArg(0);
  args.weight = body->getArg(1);
  args.out = body->getArg(2);
  for (unsigned i = 0; i < operands; ++i) args.operands.push_back(body->getArg(3 + i));
  args.begin = body->getArg(3 + static_cast<unsigned>(operands));
  args.end = body->getArg(4 + static_cast<unsigned>(operands));
  return args;
}

llvm::Value* apply_epilogue(llvm::IRBuilder<>& b, llvm::Value* value, const AnchorArgs& args,
                            llvm::Value* channel_offset, llvm::Value* out_offset, int width) {
  auto load = [&](const epilogue::EpilogueOp& op, llvm::Value* offset) {
    llvm::Value* base = args.operands.at(static_cast<size_t>(op.operand));
    if (value->getType()->isVectorTy()) return load_vector(b, base, offset, width);
    return load_scalar(b, base, offset);
  };
  auto constant = [&](float c) { return llvm::ConstantFP::get(value->getType(), c); };
  // An integer accumulator's int32 channel operand (the same pointer, read as int32).
  auto load_int = [&](const epilogue::EpilogueOp& op, llvm::Value* offset) {
    llvm::Type* i32 = b.getInt32Ty();
    llvm::Value* base =
        b.CreateBitCast(args.operands.at(static_cast<size_t>(op.operand)), i32->getPointerTo());
    llvm::Type* type = value->getType()->isVectorTy()
                           ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(i32, width))
                           : i32;
    llvm::Value* ptr = b.CreateGEP(i32, base, offset);
    return b.CreateAlignedLoad(type, b.CreateBitCast(ptr, type->getPointerTo()), llvm::Align(4));
  };
  for (const epilogue::EpilogueOp& op : args.epilogue) {
    switch (op.kind) {
      case epilogue::EpilogueOp::Kind::kToFloat: {
        llvm::Type* f32 = b.getFloatTy();
        value = b.CreateSIToFP(
            value, value->getType()->isVectorTy()
                       ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(f32, width))
                       : f32);
        break;
      }
      case epilogue::EpilogueOp::Kind::kToUInt8:
      case epilogue::EpilogueOp::Kind::kToInt8: {
        // The value is clipped to the byte's range: a plain conversion, no saturation.
        auto type = [&](llvm::Type* t) {
          return value->getType()->isVectorTy()
                     ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(t, width))
                     : t;
        };
        value = b.CreateTrunc(b.CreateFPToSI(value, type(b.getInt32Ty())), type(b.getInt8Ty()));
        break;
      }
      case epilogue::EpilogueOp::Kind::kAddChannel:
        if (value->getType()->isIntOrIntVectorTy()) {
          value = b.CreateAdd(value, load_int(op, channel_offset));
          break;
        }
        value = b.CreateFAdd(value, load(op, channel_offset));
        break;
      case epilogue::EpilogueOp::Kind::kMulChannel:
        value = b.CreateFMul(value, load(op, channel_offset));
        break;
      case epilogue::EpilogueOp::Kind::kDivChannel: {
        // x / d as a multiply by the reciprocal and one exact correction (Markstein): q0 = x *
        // (1 / d), e = x - q0 * d (exact in an FMA), q = q0 + e * (1 / d), the correctly rounded
        // quotient. The reciprocal depends on the channel alone, so it leaves the position
        // loops; a vector divide per position costs more than a small int8 convolution's
        // products on CPUs with one slow divider.
        llvm::Value* d = load(op, channel_offset);
        llvm::Value* r = b.CreateFDiv(llvm::ConstantFP::get(d->getType(), 1.0), d);
        llvm::Value* q0 = b.CreateFMul(value, r);
        llvm::Value* e =
            b.CreateIntrinsic(llvm::Intrinsic::fma, {d->getType()}, {b.CreateFNeg(q0), d, value});
        value = b.CreateIntrinsic(llvm::Intrinsic::fma, {d->getType()}, {e, r, q0});
        break;
      }
      case epilogue::EpilogueOp::Kind::kRound:
        value = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, value);
        break;
      case epilogue::EpilogueOp::Kind::kAddTensor:
        value = b.CreateFAdd(value, load(op, out_offset));
        break;
      case epilogue::EpilogueOp::Kind::kMulTensor:
        value = b.CreateFMul(value, load(op, out_offset));
        break;
      case epilogue::EpilogueOp::Kind::kAddDequantized: {
        // The bytes widened exactly, then the graph's subtract and multiply, unfused (an FMA
        // would round once where the graph rounds twice).
        llvm::Type* i8t = b.getInt8Ty();
        llvm::Type* bytes = value->getType()->isVectorTy()
                                ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(i8t, width))
                                : i8t;
        llvm::Value* base =
            b.CreateBitCast(args.operands.at(static_cast<size_t>(op.operand)), i8t->getPointerTo());
        llvm::Value* q = b.CreateAlignedLoad(
            bytes, b.CreateBitCast(b.CreateGEP(i8t, base, out_offset), bytes->getPointerTo()),
            llvm::Align(1));
        llvm::Value* x = b.CreateUIToFP(q, value->getType());
        x = b.CreateFMul(b.CreateFSub(x, constant(op.zero_point)), constant(op.scale));
        value = b.CreateFAdd(value, x);
        break;
      }
      case epilogue::EpilogueOp::Kind::kStoreTensor:
        store_vector(b, value, args.operands.at(static_cast<size_t>(op.operand)), out_offset,
                     width);
        break;
      case epilogue::EpilogueOp::Kind::kGelu:  // the element-wise kernel's GELU
        value = gelu_f32(b, value, false);
        break;
      case epilogue::EpilogueOp::Kind::kGeluTanh:
        value = gelu_f32(b, value, true);
        break;
      case epilogue::EpilogueOp::Kind::kRelu:  // x > 0 ? x : 0, the interpreter's
        value = b.CreateSelect(b.CreateFCmpOGT(value, constant(0)), value, constant(0));
        break;
      case epilogue::EpilogueOp::Kind::kClip:
        if (op.lo != -INFINITY) value = max_of(b, value, constant(op.lo));
        if (op.hi != INFINITY) value = min_of(b, value, constant(op.hi));
        break;
    }
  }
  return value;
}

}  // namespace tensortune::codegen::emit
