// The Winograd template's kernel: input transform, batched GEMM and output transform with the
// fused epilogue, per block of output tiles (see schedule_space/conv2d_winograd_template.h).
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <vector>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"
#include "schedule_space/winograd_transform.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::Conv2dWorkload;
using schedule_space::WinogradMatrices;
using schedule_space::WinogradSchedule;

/// Reduction steps of the GEMM per loop iteration: fewer branches and index updates per FMA
/// (the short pass pipeline does not unroll).
int64_t gemm_unroll(int64_t in_channels) {
  for (int64_t u : {4, 2})
    if (in_channels % u == 0) return u;
  return 1;
}

class WinogradEmitter {
 public:
  WinogradEmitter(llvm::IRBuilder<>& b, llvm::Module& m, const AnchorArgs& args,
                  const Conv2dWorkload& w, const WinogradSchedule& s, int lanes)
      : b_(b),
        args_(args),
        w_(w),
        s_(s),
        t_(schedule_space::winograd_matrices(s.m)),
        lanes_(lanes),
        tiling_(schedule_space::winograd_tiling(w, s.m)) {
    alpha_ = t_.alpha;
    a2_ = int64_t{alpha_} * alpha_;
    tiles_ = s.tiles_per_block();
    icc_ = w.in_channels / s.ic_bn;
    occ_ = w.out_channels / s.oc_bn;
    widths_ = lane_widths(s.oc_bn, lanes);
    auto* zero_type = llvm::ArrayType::get(b.getFloatTy(), static_cast<uint64_t>(s.ic_bn));
    zero_ = new llvm::GlobalVariable(m, zero_type, true, llvm::GlobalValue::InternalLinkage,
                                     llvm::ConstantAggregateZero::get(zero_type), "zero_block");
    zero_->setAlignment(llvm::Align(64));
    v_ = scratch(a2_ * tiles_ * w.in_channels, "V");
    m_ = scratch(a2_ * tiles_ * s.oc_bn, "M");
    if (s.prefetch)
      prefetch_ =
          llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::prefetch, {b.getInt8PtrTy()});
  }

  // Parallel iterations: (channel group, image, tile block), the group outermost so that a
  // thread's contiguous share of iterations streams only its groups' weights.
  void emit() {
    const int64_t blocks = (tiling_.count() + tiles_ - 1) / tiles_;
    const int64_t per_group = w_.batch * blocks;
    const int64_t groups = s_.oc_split;
    emit_for(b_, args_.begin, args_.end, "block", [&](llvm::Value* f) {
      llvm::Value* g = b_.CreateSDiv(f, i64(b_, per_group), "group");
      llvm::Value* nb = b_.CreateSRem(f, i64(b_, per_group));
      llvm::Value* n = b_.CreateSDiv(nb, i64(b_, blocks), "n");
      llvm::Value* tile0 = mul_i64(b_, b_.CreateSRem(nb, i64(b_, blocks)), tiles_);
      transform_input(n, tile0);
      // Group g's chunks [g * occ / groups, (g + 1) * occ / groups): even when occ is not a
      // multiple of the group count.
      llvm::Value* first = b_.CreateSDiv(mul_i64(b_, g, occ_), i64(b_, groups));
      llvm::Value* last = b_.CreateSDiv(mul_i64(b_, add_i64(b_, g, 1), occ_), i64(b_, groups));
      emit_for(b_, first, last, "oc_chunk", [&](llvm::Value* ocb) {
        multiply(ocb);
        transform_output(n, tile0, ocb);
      });
    });
  }

 private:
  llvm::Value* scratch(int64_t floats, const std::string& name) {
    auto* type = llvm::ArrayType::get(b_.getFloatTy(), static_cast<uint64_t>(floats));
    llvm::AllocaInst* a = entry_alloca(b_, type, name);
    a->setAlignment(llvm::Align(64));
    return b_.CreateBitCast(a, b_.getFloatTy()->getPointerTo());
  }

  llvm::Type* vec(int width) { return llvm::FixedVectorType::get(b_.getFloatTy(), width); }

  /// sum_k coeff[k * stride] * x[k], skipping zero coefficients and multiplying by +-1 as an
  /// add or subtract: the transforms' entries are mostly 0 and +-1, and an exact add both
  /// saves work and rounds less than a multiply-add would.
  llvm::Value* combine(const double* coeff, int64_t stride, const std::vector<llvm::Value*>& x,
                       int width) {
    llvm::Value* acc = nullptr;
    for (size_t k = 0; k < x.size(); ++k) {
      const double c = coeff[static_cast<int64_t>(k) * stride];
      if (c == 0.0) continue;
      llvm::Value* term = x[k];
      if (!acc) {
        if (c == -1.0)
          acc = b_.CreateFNeg(term);
        else if (c == 1.0)
          acc = term;
        else
          acc = b_.CreateFMul(splat(c, width), term);
      } else if (c == 1.0) {
        acc = b_.CreateFAdd(acc, term);
      } else if (c == -1.0) {
        acc = b_.CreateFSub(acc, term);
      } else {
        acc = fma(b_, splat(c, width), term, acc);
      }
    }
    return acc ? acc : llvm::Constant::getNullValue(vec(width));
  }

  llvm::Value* splat(double c, int width) {
    return llvm::ConstantFP::get(vec(width), static_cast<float>(c));
  }

  /// (tile row, tile column) of tile index `ti` of an image.
  std::pair<llvm::Value*, llvm::Value*> tile_position(llvm::Value* ti) {
    return {b_.CreateSDiv(ti, i64(b_, tiling_.cols)), b_.CreateSRem(ti, i64(b_, tiling_.cols))};
  }

  /// V[p][t][ic] = (B^T d B)[p] for every tile t of the block and every input channel; taps
  /// outside the input read a zero block (a select of the pointer, so no load leaves it).
  void transform_input(llvm::Value* n, llvm::Value* tile0) {
    const int x = static_cast<int>(s_.ic_bn);
    llvm::Value* zero = b_.CreateBitCast(zero_, vec(x)->getPointerTo());
    emit_for(b_, i64(b_, 0), i64(b_, tiles_), "in_tile", [&](llvm::Value* t) {
      auto [th, tw] = tile_position(add_i64(b_, tile0, t));
      llvm::Value* ih0 = add_i64(b_, mul_i64(b_, th, s_.m), -w_.pad_top);
      llvm::Value* iw0 = add_i64(b_, mul_i64(b_, tw, s_.m), -w_.pad_left);
      std::vector<llvm::Value*> row_in, col_in;
      for (int i = 0; i < alpha_; ++i) {
        row_in.push_back(b_.CreateICmpULT(add_i64(b_, ih0, i), i64(b_, w_.in_height)));
        col_in.push_back(b_.CreateICmpULT(add_i64(b_, iw0, i), i64(b_, w_.in_width)));
      }
      emit_for(b_, i64(b_, 0), i64(b_, icc_), "ic_chunk", [&](llvm::Value* icc) {
        llvm::Value* plane = mul_i64(b_, add_i64(b_, mul_i64(b_, n, icc_), icc), w_.in_height);
        std::vector<llvm::Value*> d(static_cast<size_t>(a2_));
        for (int i = 0; i < alpha_; ++i) {
          llvm::Value* row = mul_i64(b_, add_i64(b_, plane, add_i64(b_, ih0, i)), w_.in_width);
          for (int j = 0; j < alpha_; ++j) {
            llvm::Value* off = mul_i64(b_, add_i64(b_, row, add_i64(b_, iw0, j)), x);
            llvm::Value* ptr = b_.CreateBitCast(b_.CreateGEP(b_.getFloatTy(), args_.data, off),
                                                vec(x)->getPointerTo());
            ptr = b_.CreateSelect(b_.CreateAnd(row_in[i], col_in[j]), ptr, zero);
            d[i * alpha_ + j] = b_.CreateAlignedLoad(vec(x), ptr, llvm::Align(4));
          }
        }
        // tmp = B^T d (rows), then V = tmp B (columns).
        std::vector<llvm::Value*> tmp(static_cast<size_t>(a2_));
        for (int j = 0; j < alpha_; ++j) {
          std::vector<llvm::Value*> column;
          for (int k = 0; k < alpha_; ++k) column.push_back(d[k * alpha_ + j]);
          for (int i = 0; i < alpha_; ++i)
            tmp[i * alpha_ + j] = combine(&t_.bt[i * alpha_], 1, column, x);
        }
        for (int i = 0; i < alpha_; ++i) {
          std::vector<llvm::Value*> row(tmp.begin() + i * alpha_, tmp.begin() + (i + 1) * alpha_);
          for (int j = 0; j < alpha_; ++j) {
            llvm::Value* value = combine(&t_.bt[j * alpha_], 1, row, x);
            const int64_t p = int64_t{i} * alpha_ + j;
            llvm::Value* off = add_i64(b_, mul_i64(b_, add_i64(b_, t, p * tiles_), w_.in_channels),
                                       mul_i64(b_, icc, x));
            store_vector(b_, value, v_, off, x);
          }
        }
      });
    });
  }

  /// M[p][t][oc] = sum_ic V[p][t][ic] * U[p][ocb][ic][oc] for the channel block ocb: register
  /// tiles of reg_t tiles x oc_bn channels, the weights' vectors loaded once per reg_t FMAs.
  void multiply(llvm::Value* ocb) {
    const size_t nv = widths_.size();
    const int64_t unroll = gemm_unroll(w_.in_channels);
    emit_for(b_, i64(b_, 0), i64(b_, a2_), "point", [&](llvm::Value* p) {
      llvm::Value* u_base =
          mul_i64(b_, add_i64(b_, mul_i64(b_, p, occ_), ocb), w_.in_channels * s_.oc_bn);
      llvm::Value* v_base = mul_i64(b_, p, tiles_ * w_.in_channels);
      // The chunk multiplied next: point p + 1 of this channel block, or point 0 of the next
      // block (past the last block it is another group's or past the end: a prefetch of any
      // address is harmless).
      const int64_t chunk = w_.in_channels * s_.oc_bn;
      llvm::Value* next_base = nullptr;
      if (prefetch_)
        next_base = b_.CreateSelect(b_.CreateICmpSLT(add_i64(b_, p, 1), i64(b_, a2_)),
                                    add_i64(b_, u_base, occ_ * chunk),
                                    mul_i64(b_, add_i64(b_, ocb, 1), chunk));
      emit_for(b_, i64(b_, 0), i64(b_, s_.block_t), "reg_tile", [&](llvm::Value* rt) {
        llvm::Value* t0 = mul_i64(b_, rt, s_.reg_t);
        std::vector<llvm::Value*> rows;
        for (int64_t r = 0; r < s_.reg_t; ++r)
          rows.push_back(
              b_.CreateGEP(b_.getFloatTy(), v_,
                           add_i64(b_, v_base, mul_i64(b_, add_i64(b_, t0, r), w_.in_channels))));
        LoopState acc;
        for (int64_t r = 0; r < s_.reg_t; ++r)
          for (int wd : widths_) acc.push_back(llvm::Constant::getNullValue(vec(wd)));
        acc = emit_for_carried(
            b_, i64(b_, 0), i64(b_, w_.in_channels / unroll), "ic", acc,
            [&](llvm::Value* ic_step, const LoopState& a0) {
              LoopState a = a0;
              for (int64_t k = 0; k < unroll; ++k) {
                llvm::Value* ic = add_i64(b_, mul_i64(b_, ic_step, unroll), k);
                llvm::Value* u_off = add_i64(b_, u_base, mul_i64(b_, ic, s_.oc_bn));
                if (next_base) prefetch_row(add_i64(b_, next_base, mul_i64(b_, ic, s_.oc_bn)));
                std::vector<llvm::Value*> wv;
                for (size_t v = 0; v < nv; ++v)
                  wv.push_back(load_vector(b_, args_.weight,
                                           add_i64(b_, u_off, int64_t(v) * lanes_), widths_[v]));
                for (int64_t r = 0; r < s_.reg_t; ++r) {
                  llvm::Value* xv = load_scalar(b_, rows[r], ic);
                  for (size_t v = 0; v < nv; ++v) {
                    llvm::Value*& slot = a[static_cast<size_t>(r) * nv + v];
                    slot = fma(b_, b_.CreateVectorSplat(widths_[v], xv), wv[v], slot);
                  }
                }
              }
              return a;
            });
        for (int64_t r = 0; r < s_.reg_t; ++r)
          for (size_t v = 0; v < nv; ++v) {
            llvm::Value* off = add_i64(
                b_, mul_i64(b_, add_i64(b_, add_i64(b_, t0, r), mul_i64(b_, p, tiles_)), s_.oc_bn),
                int64_t(v) * lanes_);
            store_vector(b_, acc[static_cast<size_t>(r) * nv + v], m_, off, widths_[v]);
          }
      });
    });
  }

  /// Prefetches the oc_bn weights at U + offset into L2, one prefetch per 64-byte line.
  void prefetch_row(llvm::Value* offset) {
    constexpr int64_t kFloatsPerLine = 16;
    for (int64_t f = 0; f < s_.oc_bn; f += kFloatsPerLine) {
      llvm::Value* ptr = b_.CreateGEP(b_.getFloatTy(), args_.weight, add_i64(b_, offset, f));
      // (address, read, locality 2: keep in L2, data cache)
      b_.CreateCall(prefetch_, {b_.CreateBitCast(ptr, b_.getInt8PtrTy()), b_.getInt32(0),
                                b_.getInt32(2), b_.getInt32(1)});
    }
  }

  /// Y = A^T M A for every tile of the block that lies in the image, epilogue applied, stored
  /// to the output; tiles that overhang the bottom or right edge store only their inside part.
  void transform_output(llvm::Value* n, llvm::Value* tile0, llvm::Value* ocb) {
    const int m = s_.m;
    const int64_t oh = w_.out_height(), ow = w_.out_width();
    const bool all_full = oh % m == 0 && ow % m == 0;
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    emit_for(b_, i64(b_, 0), i64(b_, tiles_), "out_tile", [&](llvm::Value* t) {
      llvm::Value* ti = add_i64(b_, tile0, t);
      auto* body = llvm::BasicBlock::Create(b_.getContext(), "tile.in", fn);
      auto* done = llvm::BasicBlock::Create(b_.getContext(), "tile.done", fn);
      b_.CreateCondBr(b_.CreateICmpSLT(ti, i64(b_, tiling_.count())), body, done);
      b_.SetInsertPoint(body);
      auto [th, tw] = tile_position(ti);
      llvm::Value* oh0 = mul_i64(b_, th, m);
      llvm::Value* ow0 = mul_i64(b_, tw, m);
      std::vector<std::vector<llvm::Value*>> results;  // per vector: m*m values
      for (size_t v = 0; v < widths_.size(); ++v) results.push_back(tile_result(t, v));
      if (all_full) {
        store_tile(n, ocb, oh0, ow0, results, false);
      } else {
        auto* full = llvm::BasicBlock::Create(b_.getContext(), "tile.full", fn);
        auto* part = llvm::BasicBlock::Create(b_.getContext(), "tile.part", fn);
        llvm::Value* is_full = b_.CreateAnd(b_.CreateICmpSLE(add_i64(b_, oh0, m), i64(b_, oh)),
                                            b_.CreateICmpSLE(add_i64(b_, ow0, m), i64(b_, ow)));
        b_.CreateCondBr(is_full, full, part);
        b_.SetInsertPoint(full);
        store_tile(n, ocb, oh0, ow0, results, false);
        b_.CreateBr(done);
        b_.SetInsertPoint(part);
        store_tile(n, ocb, oh0, ow0, results, true);
      }
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
    });
  }

  /// A^T M A for vector v of tile t: m*m values, row-major.
  std::vector<llvm::Value*> tile_result(llvm::Value* t, size_t v) {
    const int m = s_.m;
    const int wd = widths_[v];
    std::vector<llvm::Value*> mv(static_cast<size_t>(a2_));
    for (int64_t p = 0; p < a2_; ++p) {
      llvm::Value* off =
          add_i64(b_, mul_i64(b_, add_i64(b_, t, p * tiles_), s_.oc_bn), int64_t(v) * lanes_);
      mv[p] = load_vector(b_, m_, off, wd);
    }
    std::vector<llvm::Value*> tmp(static_cast<size_t>(m * alpha_));
    for (int j = 0; j < alpha_; ++j) {
      std::vector<llvm::Value*> column;
      for (int k = 0; k < alpha_; ++k) column.push_back(mv[k * alpha_ + j]);
      for (int i = 0; i < m; ++i) tmp[i * alpha_ + j] = combine(&t_.at[i * alpha_], 1, column, wd);
    }
    std::vector<llvm::Value*> y(static_cast<size_t>(m * m));
    for (int i = 0; i < m; ++i) {
      std::vector<llvm::Value*> row(tmp.begin() + i * alpha_, tmp.begin() + (i + 1) * alpha_);
      for (int j = 0; j < m; ++j) y[i * m + j] = combine(&t_.at[j * alpha_], 1, row, wd);
    }
    return y;
  }

  void store_tile(llvm::Value* n, llvm::Value* ocb, llvm::Value* oh0, llvm::Value* ow0,
                  const std::vector<std::vector<llvm::Value*>>& results, bool guarded) {
    const int m = s_.m;
    const int64_t oh = w_.out_height(), ow = w_.out_width();
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::Value* plane = mul_i64(b_, add_i64(b_, mul_i64(b_, n, occ_), ocb), oh);
    llvm::Value* channel0 = mul_i64(b_, ocb, s_.oc_bn);
    for (int i = 0; i < m; ++i) {
      llvm::Value* row = mul_i64(b_, add_i64(b_, plane, add_i64(b_, oh0, i)), ow);
      for (int j = 0; j < m; ++j) {
        llvm::BasicBlock* after = nullptr;
        if (guarded) {
          auto* store = llvm::BasicBlock::Create(b_.getContext(), "store", fn);
          after = llvm::BasicBlock::Create(b_.getContext(), "store.done", fn);
          llvm::Value* inside = b_.CreateAnd(b_.CreateICmpSLT(add_i64(b_, oh0, i), i64(b_, oh)),
                                             b_.CreateICmpSLT(add_i64(b_, ow0, j), i64(b_, ow)));
          b_.CreateCondBr(inside, store, after);
          b_.SetInsertPoint(store);
        }
        llvm::Value* base = mul_i64(b_, add_i64(b_, row, add_i64(b_, ow0, j)), s_.oc_bn);
        for (size_t v = 0; v < widths_.size(); ++v) {
          llvm::Value* off = add_i64(b_, base, int64_t(v) * lanes_);
          llvm::Value* value =
              apply_epilogue(b_, results[v][static_cast<size_t>(i * m + j)], args_,
                             add_i64(b_, channel0, int64_t(v) * lanes_), off, widths_[v]);
          store_vector(b_, value, args_.out, off, widths_[v]);
        }
        if (guarded) {
          b_.CreateBr(after);
          b_.SetInsertPoint(after);
        }
      }
    }
  }

  llvm::IRBuilder<>& b_;
  const AnchorArgs& args_;
  const Conv2dWorkload& w_;
  const WinogradSchedule& s_;
  const WinogradMatrices& t_;
  int lanes_;
  schedule_space::WinogradTiling tiling_;
  int alpha_ = 0;
  int64_t a2_ = 0, tiles_ = 0, icc_ = 0, occ_ = 0;
  std::vector<int> widths_;
  llvm::GlobalVariable* zero_ = nullptr;
  llvm::Function* prefetch_ = nullptr;  ///< llvm.prefetch, declared when the schedule prefetches
  llvm::Value* v_ = nullptr;
  llvm::Value* m_ = nullptr;
};

}  // namespace

void emit_conv2d_winograd(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                          const Conv2dWorkload& w, const WinogradSchedule& s, int lanes) {
  WinogradEmitter(b, m, args, w, s, lanes).emit();
}

void emit_conv2d_winograd_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                               const schedule_space::Task& task,
                               const schedule_space::ConfigSpace& space,
                               const schedule_space::Config& config) {
  emit_conv2d_winograd(m, b, args, std::get<Conv2dWorkload>(task.workload),
                       schedule_space::conv2d_winograd_schedule(space, config),
                       task.target.vector_lanes);
}

}  // namespace tensortune::codegen::emit
