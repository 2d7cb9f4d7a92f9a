#include "compiler/codegen/llvm/register_tile.h"

#include "compiler/codegen/llvm/ir_helpers.h"

namespace tensortune::codegen::emit {

RegisterTile::RegisterTile(llvm::IRBuilder<>& b, int64_t rows, std::vector<int> widths)
    : rows_(rows), widths_(std::move(widths)) {
  for (int64_t r = 0; r < rows_; ++r)
    for (int w : widths_) {
      auto* type = llvm::FixedVectorType::get(b.getFloatTy(), static_cast<unsigned>(w));
      llvm::AllocaInst* a = entry_alloca(b, type, "acc");
      b.CreateStore(llvm::Constant::getNullValue(type), a);
      acc_.push_back(a);
    }
}

void RegisterTile::broadcast_fma(llvm::IRBuilder<>& b, int64_t row, llvm::Value* x,
                                 const std::vector<llvm::Value*>& w) {
  for (size_t c = 0; c < widths_.size(); ++c)
    fma(b, row, c, b.CreateVectorSplat(static_cast<unsigned>(widths_[c]), x), w[c]);
}

void RegisterTile::fma(llvm::IRBuilder<>& b, int64_t row, size_t column, llvm::Value* a,
                       llvm::Value* w) {
  llvm::AllocaInst* acc = at(row, column);
  b.CreateStore(emit::fma(b, a, w, value(b, row, column)), acc);
}

llvm::Value* RegisterTile::value(llvm::IRBuilder<>& b, int64_t row, size_t column) const {
  llvm::AllocaInst* acc = at(row, column);
  return b.CreateLoad(acc->getAllocatedType(), acc);
}

void RegisterTile::set(llvm::IRBuilder<>& b, int64_t row, size_t column, llvm::Value* v) {
  b.CreateStore(v, at(row, column));
}

llvm::Value* horizontal_sum(llvm::IRBuilder<>& b, llvm::Value* v) {
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  b.setFastMathFlags(fmf);
  llvm::Value* sum = b.CreateFAddReduce(llvm::ConstantFP::get(b.getFloatTy(), 0.0), v);
  b.clearFastMathFlags();
  return sum;
}

}  // namespace tensortune::codegen::emit
