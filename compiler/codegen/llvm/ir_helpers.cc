#include "compiler/codegen/llvm/ir_helpers.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

namespace tensortune::codegen::emit {

LoopState emit_for_carried(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi,
                           const std::string& name, const LoopState& init,
                           const std::function<LoopState(llvm::Value*, const LoopState&)>& body) {
  auto* clo = llvm::dyn_cast<llvm::ConstantInt>(lo);
  auto* chi = llvm::dyn_cast<llvm::ConstantInt>(hi);
  if (clo && chi) {
    const int64_t trips = chi->getSExtValue() - clo->getSExtValue();
    if (trips <= 0) return init;
    if (trips == 1) return body(lo, init);
  }
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx, name + ".header", f);
  auto* body_bb = llvm::BasicBlock::Create(ctx, name + ".body", f);
  auto* exit = llvm::BasicBlock::Create(ctx, name + ".exit", f);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(b.getInt64Ty(), 2, name);
  iv->addIncoming(lo, pre);
  LoopState phis;
  for (llvm::Value* v : init) {
    llvm::PHINode* phi = b.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, pre);
    phis.push_back(phi);
  }
  b.CreateCondBr(b.CreateICmpSLT(iv, hi), body_bb, exit);
  b.SetInsertPoint(body_bb);
  LoopState next_state = body(iv, phis);
  llvm::Value* next = b.CreateAdd(iv, b.getInt64(1), name + ".next", false, true);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  iv->addIncoming(next, latch);
  for (size_t i = 0; i < phis.size(); ++i)
    llvm::cast<llvm::PHINode>(phis[i])->addIncoming(next_state[i], latch);
  b.CreateBr(header);
  b.SetInsertPoint(exit);
  return phis;
}

void emit_for(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, const std::string& name,
              const std::function<void(llvm::Value*)>& body) {
  emit_for_carried(b, lo, hi, name, {}, [&](llvm::Value* iv, const LoopState& state) {
    body(iv);
    return state;
  });
}

void emit_if_else(llvm::IRBuilder<>& b, llvm::Value* cond, const std::string& name,
                  const std::function<void()>& then_body, const std::function<void()>& else_body) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  auto* then_bb = llvm::BasicBlock::Create(b.getContext(), name + ".then", f);
  auto* else_bb = llvm::BasicBlock::Create(b.getContext(), name + ".else", f);
  auto* done = llvm::BasicBlock::Create(b.getContext(), name + ".done", f);
  b.CreateCondBr(cond, then_bb, else_bb);
  b.SetInsertPoint(then_bb);
  then_body();
  b.CreateBr(done);
  b.SetInsertPoint(else_bb);
  else_body();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

llvm::Value* mul_i64(llvm::IRBuilder<>& b, llvm::Value* a, int64_t c) {
  if (c == 1) return a;
  return b.CreateMul(a, b.getInt64(c), "", false, true);
}

llvm::Value* add_i64(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* c) {
  if (auto* k = llvm::dyn_cast<llvm::ConstantInt>(c); k && k->isZero()) return a;
  if (auto* k = llvm::dyn_cast<llvm::ConstantInt>(a); k && k->isZero()) return c;
  return b.CreateAdd(a, c, "", false, true);
}

llvm::Value* add_i64(llvm::IRBuilder<>& b, llvm::Value* a, int64_t c) {
  return add_i64(b, a, b.getInt64(c));
}

llvm::Value* load_scalar(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* offset) {
  llvm::Value* ptr = b.CreateInBoundsGEP(b.getFloatTy(), base, offset);
  return b.CreateAlignedLoad(b.getFloatTy(), ptr, llvm::Align(4));
}

llvm::Value* load_vector(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* offset, int width) {
  llvm::Value* ptr = b.CreateInBoundsGEP(b.getFloatTy(), base, offset);
  auto* vt = llvm::FixedVectorType::get(b.getFloatTy(), width);
  llvm::Value* vptr = b.CreateBitCast(ptr, vt->getPointerTo());
  return b.CreateAlignedLoad(vt, vptr, llvm::Align(4));
}

void store_vector(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base, llvm::Value* offset,
                  int width) {
  llvm::Type* element = value->getType()->getScalarType();
  llvm::Value* typed = b.CreateBitCast(base, element->getPointerTo());
  llvm::Value* ptr = b.CreateInBoundsGEP(element, typed, offset);
  llvm::Type* vt = value->getType()->isVectorTy()
                       ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(element, width))
                       : element;
  llvm::Value* vptr = b.CreateBitCast(ptr, vt->getPointerTo());
  b.CreateAlignedStore(value, vptr, llvm::Align(element->getPrimitiveSizeInBits() / 8));
}

llvm::Value* max_of(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* c) {
  return b.CreateSelect(b.CreateFCmpOLT(a, c), c, a);
}

llvm::Value* min_of(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* c) {
  return b.CreateSelect(b.CreateFCmpOLT(c, a), c, a);
}

llvm::Value* fma(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, llvm::Value* acc) {
  return b.CreateIntrinsic(llvm::Intrinsic::fma, {acc->getType()}, {x, y, acc});
}

llvm::Function* create_kernel_function(llvm::Module& m, const std::string& name, int vector_bits) {
  llvm::LLVMContext& ctx = m.getContext();
  auto* fptr = llvm::Type::getFloatPtrTy(ctx);
  auto* i64t = llvm::Type::getInt64Ty(ctx);
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                      {fptr, fptr, fptr, fptr, i64t, i64t}, false);
  auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m);
  const char* names[] = {"data", "weight", "bias", "out", "begin", "end"};
  for (unsigned i = 0; i < 6; ++i) {
    f->getArg(i)->setName(names[i]);
    if (i < 4) f->addParamAttr(i, llvm::Attribute::NoAlias);
  }
  set_vector_attributes(f, vector_bits);
  return f;
}

void set_vector_attributes(llvm::Function* f, int vector_bits) {
  const std::string bits = std::to_string(vector_bits);
  f->addFnAttr("prefer-vector-width", bits);
  f->addFnAttr("min-legal-vector-width", bits);
  f->addFnAttr(llvm::Attribute::NoUnwind);
}

llvm::Function* create_network_function(llvm::Module& m, llvm::IRBuilder<>& b,
                                        const std::string& name, int vector_bits) {
  llvm::LLVMContext& ctx = m.getContext();
  auto* fptr = llvm::Type::getFloatPtrTy(ctx);
  auto* i64t = llvm::Type::getInt64Ty(ctx);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                       {fptr->getPointerTo(), i64t, i64t}, false);
  auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, m);
  set_vector_attributes(f, vector_bits);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  return f;
}

llvm::Value* network_arg(llvm::IRBuilder<>& b, llvm::Function* f, unsigned i) {
  auto* fptr = b.getFloatTy()->getPointerTo();
  return b.CreateAlignedLoad(fptr, b.CreateInBoundsGEP(fptr, f->getArg(0), b.getInt64(i)),
                             llvm::Align(8));
}

std::vector<int> lane_widths(int64_t block, int lanes) {
  std::vector<int> widths;
  for (int64_t c = 0; c < block; c += lanes)
    widths.push_back(static_cast<int>(std::min<int64_t>(lanes, block - c)));
  return widths;
}

llvm::Value* clamp_index(llvm::IRBuilder<>& b, llvm::Value* v, int64_t hi) {
  llvm::Value* lo = b.CreateSelect(b.CreateICmpSLT(v, b.getInt64(0)), b.getInt64(0), v);
  return b.CreateSelect(b.CreateICmpSGT(lo, b.getInt64(hi - 1)), b.getInt64(hi - 1), lo);
}

llvm::AllocaInst* entry_alloca(llvm::IRBuilder<>& b, llvm::Type* type, const std::string& name) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::IRBuilder<> eb(&f->getEntryBlock(), f->getEntryBlock().begin());
  return eb.CreateAlloca(type, nullptr, name);
}

}  // namespace tensortune::codegen::emit
