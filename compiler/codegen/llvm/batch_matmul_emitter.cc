#include <llvm/IR/Module.h>

#include <vector>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"
#include "compiler/codegen/llvm/register_tile.h"
#include "schedule_space/batch_matmul_template.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::BatchMatmulSchedule;
using schedule_space::BatchMatmulWorkload;

struct TileOrigin {
  llvm::Value* batch;  ///< b
  llvm::Value* y0;     ///< first row of the tile
  llvm::Value* x0;     ///< first column of the tile
};

/// The tile of parallel iteration `fused`: batch-major, then row tiles, then column tiles.
TileOrigin tile_origin(llvm::IRBuilder<>& b, llvm::Value* fused, const BatchMatmulWorkload& w,
                       const BatchMatmulSchedule& s) {
  const int64_t xtiles = w.n / s.xi, tiles = (w.m / s.yi) * xtiles;
  llvm::Value* batch = b.CreateSDiv(fused, i64(b, tiles));
  llvm::Value* tile = b.CreateSRem(fused, i64(b, tiles));
  return {batch, b.CreateMul(b.CreateSDiv(tile, i64(b, xtiles)), i64(b, s.yi)),
          b.CreateMul(b.CreateSRem(tile, i64(b, xtiles)), i64(b, s.xi))};
}

/// w as [B, K, N]: a yi x xi register tile, the columns as vectors, one broadcast FMA per row
/// and k; k unrolled by kf.
void emit_nn(llvm::IRBuilder<>& b, const AnchorArgs& args, const BatchMatmulWorkload& w,
             const BatchMatmulSchedule& s, int lanes) {
  const int64_t M = w.m, N = w.n, K = w.k;
  const std::vector<int> widths = lane_widths(s.xi, lanes);
  auto mul = [&](llvm::Value* a, int64_t c) { return b.CreateMul(a, i64(b, c), "", false, true); };
  auto add = [&](llvm::Value* a, llvm::Value* c) { return b.CreateAdd(a, c, "", false, true); };
  emit_for(b, args.begin, args.end, "fused", [&](llvm::Value* fused) {
    const TileOrigin t = tile_origin(b, fused, w, s);
    llvm::Value* a_base = mul(add(mul(t.batch, M), t.y0), K);  // x[b, y0, 0]
    llvm::Value* w_base = add(mul(t.batch, K * N), t.x0);      // w[b, 0, x0]
    RegisterTile tile(b, s.yi, widths);
    emit_for(b, i64(b, 0), i64(b, K / s.kf), "ko", [&](llvm::Value* ko) {
      for (int64_t ki = 0; ki < s.kf; ++ki) {
        llvm::Value* k = add(mul(ko, s.kf), i64(b, ki));
        llvm::Value* row = add(w_base, mul(k, N));
        std::vector<llvm::Value*> wv;
        for (size_t v = 0; v < widths.size(); ++v)
          wv.push_back(load_vector(b, args.weight, add(row, i64(b, v * lanes)), widths[v]));
        for (int64_t y = 0; y < s.yi; ++y)
          tile.broadcast_fma(b, y, load_scalar(b, args.data, add(add(a_base, i64(b, y * K)), k)),
                             wv);
      }
    });
    for (int64_t y = 0; y < s.yi; ++y)
      for (size_t v = 0; v < widths.size(); ++v) {
        llvm::Value* col = add(t.x0, i64(b, v * lanes));
        llvm::Value* offset = add(mul(add(add(mul(t.batch, M), t.y0), i64(b, y)), N), col);
        store_vector(b, apply_epilogue(b, tile.value(b, y, v), args, col, offset, widths[v]),
                     args.out, offset, widths[v]);
      }
  });
}

/// w as [B, N, K] (AutoTVM's form): yi x xi dot products, k vectorised by kf lanes.
void emit_nt(llvm::IRBuilder<>& b, const AnchorArgs& args, const BatchMatmulWorkload& w,
             const BatchMatmulSchedule& s) {
  const int64_t M = w.m, N = w.n, K = w.k, vk = s.kf;
  auto mul = [&](llvm::Value* a, int64_t c) { return b.CreateMul(a, i64(b, c), "", false, true); };
  auto add = [&](llvm::Value* a, llvm::Value* c) { return b.CreateAdd(a, c, "", false, true); };
  emit_for(b, args.begin, args.end, "fused", [&](llvm::Value* fused) {
    const TileOrigin t = tile_origin(b, fused, w, s);
    llvm::Value* a_base = mul(add(mul(t.batch, M), t.y0), K);  // x[b, y0, 0]
    llvm::Value* w_base = mul(add(mul(t.batch, N), t.x0), K);  // w[b, x0, 0]
    RegisterTile tile(b, s.yi, std::vector<int>(static_cast<size_t>(s.xi), static_cast<int>(vk)));
    emit_for(b, i64(b, 0), i64(b, K / vk), "ko", [&](llvm::Value* ko) {
      llvm::Value* k = mul(ko, vk);
      std::vector<llvm::Value*> av, wv;
      for (int64_t y = 0; y < s.yi; ++y)
        av.push_back(load_vector(b, args.data, add(add(a_base, i64(b, y * K)), k), vk));
      for (int64_t x = 0; x < s.xi; ++x)
        wv.push_back(load_vector(b, args.weight, add(add(w_base, i64(b, x * K)), k), vk));
      for (int64_t y = 0; y < s.yi; ++y)
        for (int64_t x = 0; x < s.xi; ++x) tile.fma(b, y, x, av[y], wv[x]);
    });
    for (int64_t y = 0; y < s.yi; ++y)
      for (int64_t x = 0; x < s.xi; ++x) {
        llvm::Value* sum = horizontal_sum(b, tile.value(b, y, x));
        llvm::Value* col = add(t.x0, i64(b, x));
        llvm::Value* offset = add(mul(add(add(mul(t.batch, M), t.y0), i64(b, y)), N), col);
        store_vector(b, apply_epilogue(b, sum, args, col, offset, 1), args.out, offset, 1);
      }
  });
}

}  // namespace

void emit_batch_matmul_task(llvm::Module&, llvm::IRBuilder<>& b, const AnchorArgs& args,
                            const schedule_space::Task& task,
                            const schedule_space::ConfigSpace& space,
                            const schedule_space::Config& config) {
  const auto& w = std::get<BatchMatmulWorkload>(task.workload);
  const BatchMatmulSchedule s = schedule_space::batch_matmul_schedule(space, config);
  if (w.transpose_b) {
    emit_nt(b, args, w, s);
  } else {
    emit_nn(b, args, w, s, task.target.vector_lanes);
  }
}

}  // namespace tensortune::codegen::emit
