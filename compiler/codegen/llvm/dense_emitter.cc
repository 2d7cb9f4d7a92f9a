#include <llvm/IR/Module.h>

#include <vector>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"
#include "compiler/codegen/llvm/register_tile.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::DenseSchedule;
using schedule_space::DenseWorkload;

/// out[y, x] with weights packed (N/bn, K, bn): a yi x bn register tile, k unrolled by kf.
void emit_packed(llvm::IRBuilder<>& b, const AnchorArgs& args, const DenseWorkload& w,
                 const DenseSchedule& s, int lanes) {
  llvm::Value *A = args.data, *W = args.weight, *C = args.out;
  const int64_t M = w.batch, N = w.out_features, K = w.in_features, bn = s.xi;
  const int64_t ytiles = M / (s.yo * s.yi);
  const std::vector<int> widths = lane_widths(bn, lanes);
  auto mul = [&](llvm::Value* a, int64_t c) { return b.CreateMul(a, i64(b, c), "", false, true); };
  auto add = [&](llvm::Value* a, llvm::Value* c) { return b.CreateAdd(a, c, "", false, true); };
  emit_for(b, args.begin, args.end, "fused", [&](llvm::Value* fused) {
    llvm::Value* yt = b.CreateSRem(fused, i64(b, ytiles));
    llvm::Value* xt = b.CreateSDiv(fused, i64(b, ytiles));
    emit_for(b, i64(b, 0), i64(b, s.yo), "yo", [&](llvm::Value* yo) {
      emit_for(b, i64(b, 0), i64(b, s.xo), "xo", [&](llvm::Value* xo) {
        llvm::Value* y0 = mul(add(mul(yt, s.yo), yo), s.yi);
        llvm::Value* xb = add(mul(xt, s.xo), xo);
        RegisterTile tile(b, s.yi, widths);
        emit_for(b, i64(b, 0), i64(b, K / s.kf), "ko", [&](llvm::Value* ko) {
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
  emit_dense(b, args, std::get<DenseWorkload>(task.workload),
             schedule_space::dense_schedule(space, config, true), task.target.vector_lanes);
}

void emit_dense_nopack_task(llvm::Module&, llvm::IRBuilder<>& b, const AnchorArgs& args,
                            const schedule_space::Task& task,
                            const schedule_space::ConfigSpace& space,
                            const schedule_space::Config& config) {
  emit_dense(b, args, std::get<DenseWorkload>(task.workload),
             schedule_space::dense_schedule(space, config, false), task.target.vector_lanes);
}

}  // namespace tensortune::codegen::emit
