#pragma once
/// \file
/// Private to compiler/codegen/llvm: the accumulators of a GEMM register tile, what the dense and
/// batch matmul emitters share. A tile is rows x columns vectors, each column of its own lane
/// width (a block that is no multiple of the vector width ends in a narrower one), zeroed where
/// it is created and kept in entry-block allocas that SROA promotes to registers.

#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <vector>

namespace tensortune::codegen::emit {

class RegisterTile {
 public:
  /// `rows` rows of vectors of `widths` lanes each, zeroed at the builder's position.
  RegisterTile(llvm::IRBuilder<>& b, int64_t rows, std::vector<int> widths);

  int64_t rows() const { return rows_; }
  const std::vector<int>& widths() const { return widths_; }

  /// acc[row][c] += broadcast(x) * w[c] for every column c: one row of an outer-product step.
  void broadcast_fma(llvm::IRBuilder<>& b, int64_t row, llvm::Value* x,
                     const std::vector<llvm::Value*>& w);
  /// acc[row][column] += a * w, lane by lane.
  void fma(llvm::IRBuilder<>& b, int64_t row, size_t column, llvm::Value* a, llvm::Value* w);
  /// The accumulator's value now.
  llvm::Value* value(llvm::IRBuilder<>& b, int64_t row, size_t column) const;
  /// Replaces the accumulator's value (a rescaling: an online softmax's correction).
  void set(llvm::IRBuilder<>& b, int64_t row, size_t column, llvm::Value* v);

 private:
  llvm::AllocaInst* at(int64_t row, size_t column) const {
    return acc_[static_cast<size_t>(row) * widths_.size() + column];
  }
  int64_t rows_;
  std::vector<int> widths_;
  std::vector<llvm::AllocaInst*> acc_;
};

/// The sum of a float vector's lanes, in any order (reassociation allowed).
llvm::Value* horizontal_sum(llvm::IRBuilder<>& b, llvm::Value* v);

}  // namespace tensortune::codegen::emit
