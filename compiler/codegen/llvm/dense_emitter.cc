#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <optional>
#include <vector>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"
#include "compiler/codegen/llvm/register_tile.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::DenseSchedule;
using schedule_space::DenseWorkload;

/// Prefetches (into L2) the packed weights of the next column tile while the current one is
/// computed. The next panel of K x bn weights is cut into one chunk of 64-byte lines per row tile
/// of the current column tile, and row tile r's k loop prefetches chunk r a few lines per
/// iteration, so that the whole panel is in L2 when the next column tile starts and each line
/// is asked for about once. Every address stays within the next panel (the last column tile
/// prefetches its own, already cached).
class NextPanelPrefetch {
 public:
  NextPanelPrefetch(llvm::IRBuilder<>& b, llvm::Value* weights, const DenseWorkload& w,
                    const DenseSchedule& s, int64_t row_tiles)
      : b_(b), weights_(weights), xo_(s.xo), panels_(w.out_features / s.xi) {
    panel_lines_ = ceil_div(w.in_features * s.xi, kLineFloats);
    chunk_lines_ = ceil_div(panel_lines_, row_tiles);
    lines_per_step_ = ceil_div(chunk_lines_, w.in_features / s.kf);
    prefetch_ = llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(),
                                                llvm::Intrinsic::prefetch, {b.getInt8PtrTy()});
  }

  /// Row tile `row_tile`'s chunk of the panel after column block `block`: its first line and
  /// its last, which never passes the panel's.
  struct Chunk {
    llvm::Value* first;
    llvm::Value* last;
  };
  Chunk chunk(llvm::Value* block, llvm::Value* row_tile) {
    llvm::Value* next = add_i64(b_, block, xo_);
    next = b_.CreateSelect(b_.CreateICmpSLT(next, i64(b_, panels_)), next, block);
    llvm::Value* panel_first = mul_i64(b_, next, panel_lines_);
    llvm::Value* panel_last = add_i64(b_, panel_first, panel_lines_ - 1);
    llvm::Value* first =
        smin(add_i64(b_, panel_first, mul_i64(b_, row_tile, chunk_lines_)), panel_last);
    return {first, smin(add_i64(b_, first, chunk_lines_ - 1), panel_last)};
  }

  /// The prefetches of k-loop step `step` (past the chunk's end they repeat its last line).
  void emit(const Chunk& c, llvm::Value* step) {
    for (int64_t j = 0; j < lines_per_step_; ++j) {
      llvm::Value* line =
          smin(add_i64(b_, c.first, add_i64(b_, mul_i64(b_, step, lines_per_step_), j)), c.last);
      llvm::Value* ptr = b_.CreateGEP(b_.getFloatTy(), weights_, mul_i64(b_, line, kLineFloats));
      b_.CreateCall(prefetch_, {b_.CreateBitCast(ptr, b_.getInt8PtrTy()), b_.getInt32(0),
                                b_.getInt32(2), b_.getInt32(1)});
    }
  }

 private:
  static constexpr int64_t kLineFloats = 16;  // a 64-byte cache line
  static int64_t ceil_div(int64_t a, int64_t c) { return (a + c - 1) / c; }
  llvm::Value* smin(llvm::Value* v, llvm::Value* hi) {
    return b_.CreateSelect(b_.CreateICmpSLT(v, hi), v, hi);
  }

  llvm::IRBuilder<>& b_;
  llvm::Value* weights_;
  int64_t xo_, panels_;
  int64_t panel_lines_ = 1, chunk_lines_ = 1, lines_per_step_ = 1;
  llvm::Function* prefetch_ = nullptr;
};

/// out[y, x] with weights packed (N/bn, K, bn): a yi x bn register tile, k unrolled by kf.
/// The parallel loop runs the row tiles of one column tile after another, so that a column
/// tile's weights stay in cache while every row passes over them.
void emit_packed(llvm::IRBuilder<>& b, const AnchorArgs& args, const DenseWorkload& w,
                 const DenseSchedule& s, int lanes) {
  llvm::Value *A = args.data, *W = args.weight, *C = args.out;
  const int64_t M = w.batch, N = w.out_features, K = w.in_features, bn = s.xi;
  const int64_t ytiles = M / (s.yo * s.yi);
  const std::vector<int> widths = lane_widths(bn, lanes);
  auto mul = [&](llvm::Value* a, int64_t c) { return b.CreateMul(a, i64(b, c), "", false, true); };
  auto add = [&](llvm::Value* a, llvm::Value* c) { return b.CreateAdd(a, c, "", false, true); };
  std::optional<NextPanelPrefetch> prefetch;
  if (s.prefetch_weights) prefetch.emplace(b, W, w, s, ytiles * s.yo);
  emit_for(b, args.begin, args.end, "fused", [&](llvm::Value* fused) {
    llvm::Value* yt = b.CreateSRem(fused, i64(b, ytiles));
    llvm::Value* xt = b.CreateSDiv(fused, i64(b, ytiles));
    emit_for(b, i64(b, 0), i64(b, s.yo), "yo", [&](llvm::Value* yo) {
      emit_for(b, i64(b, 0), i64(b, s.xo), "xo", [&](llvm::Value* xo) {
        llvm::Value* y0 = mul(add(mul(yt, s.yo), yo), s.yi);
        llvm::Value* xb = add(mul(xt, s.xo), xo);
        RegisterTile tile(b, s.yi, widths);
        NextPanelPrefetch::Chunk chunk{};
        if (prefetch) chunk = prefetch->chunk(xb, add(mul(yt, s.yo), yo));
        emit_for(b, i64(b, 0), i64(b, K / s.kf), "ko", [&](llvm::Value* ko) {
          if (prefetch) prefetch->emit(chunk, ko);
          for (int64_t ki = 0; ki < s.kf; ++ki) {
            llvm::Value* k = add(mul(ko, s.kf), i64(b, ki));
            llvm::Value* wbase = mul(add(mul(xb, K), k), bn);
            std::vector<llvm::Value*> wv;
            for (size_t v = 0; v < widths.size(); ++v)
              wv.push_back(load_vector(b, W, add(wbase, i64(b, v * lanes)), widths[v]));
            for (int64_t y = 0; y < s.yi; ++y)
              tile.broadcast_fma(b, y, load_scalar(b, A, add(mul(add(y0, i64(b, y)), K), k)), wv);
          }
        });
        for (int64_t y = 0; y < s.yi; ++y)
          for (size_t v = 0; v < widths.size(); ++v) {
            llvm::Value* col = add(mul(xb, bn), i64(b, v * lanes));
            llvm::Value* offset = add(mul(add(y0, i64(b, y)), N), col);
            store_vector(b, apply_epilogue(b, tile.value(b, y, v), args, col, offset, widths[v]), C,
                         offset, widths[v]);
          }
      });
    });
  });
}

/// out[y, x] = dot(A[y, :], W[x, :]) with the k axis vectorised by vk lanes.
void emit_nopack(llvm::IRBuilder<>& b, const AnchorArgs& args, const DenseWorkload& w,
                 const DenseSchedule& s) {
  llvm::Value *A = args.data, *W = args.weight, *C = args.out;
  const int64_t N = w.out_features, K = w.in_features, vk = s.kf;
  const int64_t xtiles = N / s.xi;
  auto mul = [&](llvm::Value* a, int64_t c) { return b.CreateMul(a, i64(b, c), "", false, true); };
  auto add = [&](llvm::Value* a, llvm::Value* c) { return b.CreateAdd(a, c, "", false, true); };
  emit_for(b, args.begin, args.end, "fused", [&](llvm::Value* fused) {
    llvm::Value* y0 = mul(b.CreateSDiv(fused, i64(b, xtiles)), s.yi);
    llvm::Value* x0 = mul(b.CreateSRem(fused, i64(b, xtiles)), s.xi);
    RegisterTile tile(b, s.yi, std::vector<int>(static_cast<size_t>(s.xi), static_cast<int>(vk)));
    emit_for(b, i64(b, 0), i64(b, K / vk), "ko", [&](llvm::Value* ko) {
      llvm::Value* k = mul(ko, vk);
      std::vector<llvm::Value*> av, wv;
      for (int64_t y = 0; y < s.yi; ++y)
        av.push_back(load_vector(b, A, add(mul(add(y0, i64(b, y)), K), k), vk));
      for (int64_t x = 0; x < s.xi; ++x)
        wv.push_back(load_vector(b, W, add(mul(add(x0, i64(b, x)), K), k), vk));
      for (int64_t y = 0; y < s.yi; ++y)
        for (int64_t x = 0; x < s.xi; ++x) tile.fma(b, y, x, av[y], wv[x]);
    });
    for (int64_t y = 0; y < s.yi; ++y)
      for (int64_t x = 0; x < s.xi; ++x) {
        llvm::Value* sum = horizontal_sum(b, tile.value(b, y, x));
        llvm::Value* col = add(x0, i64(b, x));
        llvm::Value* offset = add(mul(add(y0, i64(b, y)), N), col);
        store_vector(b, apply_epilogue(b, sum, args, col, offset, 1), C, offset, 1);
      }
  });
}

}  // namespace

void emit_dense(llvm::IRBuilder<>& b, const AnchorArgs& args, const DenseWorkload& w,
                const DenseSchedule& s, int lanes) {
  if (s.packed) {
    emit_packed(b, args, w, s, lanes);
  } else {
    emit_nopack(b, args, w, s);
  }
}

void emit_dense_pack_task(llvm::Module&, llvm::IRBuilder<>& b, const AnchorArgs& args,
                          const schedule_space::Task& task,
                          const schedule_space::ConfigSpace& space,
                          const schedule_space::Config& config) {
  const auto& w = std::get<DenseWorkload>(task.workload);
  emit_dense(b, args, w, schedule_space::dense_schedule(space, config, w, true),
             task.target.vector_lanes);
}

void emit_dense_nopack_task(llvm::Module&, llvm::IRBuilder<>& b, const AnchorArgs& args,
                            const schedule_space::Task& task,
                            const schedule_space::ConfigSpace& space,
                            const schedule_space::Config& config) {
  const auto& w = std::get<DenseWorkload>(task.workload);
  emit_dense(b, args, w, schedule_space::dense_schedule(space, config, w, false),
             task.target.vector_lanes);
}

}  // namespace tensortune::codegen::emit
