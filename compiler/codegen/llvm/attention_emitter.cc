// attention.x86 (schedule_space/attention_template.h): per tile of yi query rows, the keys a
// block of xi at a time. The block's scores are a register tile (q broadcast times rows of k^T);
// scaled and masked, each row's maximum updates the running one, the exponentials go to a small
// scratch and their sum into the running sum, both corrected by exp(old max - new max), as are
// the output accumulators before the block's exponentials times v's rows join them. The scores
// never reach memory: what the unfused path writes and reads back twice (Q K^T, softmax) stays
// in registers and L1.
#include <llvm/IR/Module.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/float_math.h"
#include "compiler/codegen/llvm/ir_helpers.h"
#include "compiler/codegen/llvm/register_tile.h"
#include "schedule_space/attention_template.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::AttentionSchedule;
using schedule_space::AttentionWorkload;

struct Operands {
  llvm::Value *q, *k, *v, *mask;
};

/// Network kernels take v and the mask as inputs; tuning kernels find them after k^T in the
/// weight buffer.
Operands operands_of(llvm::IRBuilder<>& b, const AnchorArgs& args, const AttentionWorkload& w) {
  if (!args.inputs.empty())
    return {args.data, args.weight, args.inputs[0], w.has_mask() ? args.inputs[1] : nullptr};
  const auto at = schedule_space::attention_operand_offsets(w);
  return {args.data, args.weight, b.CreateInBoundsGEP(b.getFloatTy(), args.weight, i64(b, at.v)),
          b.CreateInBoundsGEP(b.getFloatTy(), args.weight, i64(b, at.mask))};
}

llvm::Value* splat(llvm::IRBuilder<>& b, int width, llvm::Value* x) {
  return b.CreateVectorSplat(static_cast<unsigned>(width), x);
}

/// The largest lane of the vectors: lane-wise maxima first, then halves of the vector against
/// each other (overlapping by a lane where the width is odd, which max allows) down to one lane.
/// LLVM's vector.reduce.fmax goes lane by lane with a NaN check each, a few hundred instructions
/// per row of a block.
llvm::Value* row_max(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& vectors) {
  llvm::Value* top = nullptr;
  for (llvm::Value* v : vectors) {
    auto width =
        static_cast<int>(llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements());
    while (width > 1) {
      const int half = width / 2;
      std::vector<int> lo, hi;
      for (int i = 0; i < half; ++i) {
        lo.push_back(i);
        hi.push_back(width - half + i);
      }
      v = max_of(b, b.CreateShuffleVector(v, lo), b.CreateShuffleVector(v, hi));
      width = half;
    }
    llvm::Value* lane = b.CreateExtractElement(v, uint64_t{0});
    top = top ? max_of(b, top, lane) : lane;
  }
  return top;
}

/// The vectors of one row, those of one width added lane by lane first: what a row's maximum and
/// sum reduce across lanes once instead of once per vector.
std::vector<llvm::Value*> lane_wise(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& vectors,
                                    bool maximum) {
  std::vector<llvm::Value*> out;
  for (llvm::Value* v : vectors) {
    auto same = std::find_if(out.begin(), out.end(),
                             [&](llvm::Value* o) { return o->getType() == v->getType(); });
    if (same == out.end()) {
      out.push_back(v);
    } else {
      *same = maximum ? max_of(b, *same, v) : b.CreateFAdd(*same, v);
    }
  }
  return out;
}

}  // namespace

void emit_attention_task(llvm::Module&, llvm::IRBuilder<>& b, const AnchorArgs& args,
                         const schedule_space::Task& task, const schedule_space::ConfigSpace& space,
                         const schedule_space::Config& config) {
  const auto& w = std::get<AttentionWorkload>(task.workload);
  const AttentionSchedule s = schedule_space::attention_schedule(space, config);
  const int lanes = task.target.vector_lanes;
  const int64_t M = w.m, N = w.n, K = w.k, Dv = w.dv, yi = s.yi, xi = s.xi;
  const Operands in = operands_of(b, args, w);
  const std::vector<int> value_widths = lane_widths(Dv, lanes);
  llvm::Type* f32 = b.getFloatTy();
  auto* scratch_type = llvm::ArrayType::get(f32, static_cast<uint64_t>(yi * xi));
  llvm::Value* scratch = b.CreateBitCast(entry_alloca(b, scratch_type, "exp"), f32->getPointerTo());
  std::vector<llvm::AllocaInst*> row_max_of, row_sum_of;
  for (int64_t y = 0; y < yi; ++y) {
    row_max_of.push_back(entry_alloca(b, f32, "max"));
    row_sum_of.push_back(entry_alloca(b, f32, "sum"));
  }
  llvm::Value* scale = llvm::ConstantFP::get(f32, w.scale);
  // Tiles of yi rows, the last one shorter where yi does not divide M; blocks of xi keys, then
  // the rest.
  const int64_t tiles = (M + yi - 1) / yi, full_blocks = N / xi, tail_keys = N % xi;
  const int64_t heads_per_mask = w.has_mask() ? w.batch / w.mask_batch : 1;

  struct Tile {
    int64_t rows;
    llvm::Value *batch, *y0, *row0, *q_base, *k_base, *v_base, *mask_base;
  };
  // One block of `keys` keys from n0 into the tile's running max, sum and output.
  auto emit_block = [&](const Tile& t, RegisterTile& acc, llvm::Value* n0, int64_t keys) {
    const std::vector<int> key_widths = lane_widths(keys, lanes);
    // The block's scores: q[y, :] . k^T[:, n0 + j].
    RegisterTile scores(b, t.rows, key_widths);
    emit_for(b, i64(b, 0), i64(b, K), "k", [&](llvm::Value* d) {
      llvm::Value* row = add_i64(b, add_i64(b, t.k_base, mul_i64(b, d, N)), n0);
      std::vector<llvm::Value*> kv;
      for (size_t c = 0; c < key_widths.size(); ++c)
        kv.push_back(
            load_vector(b, in.k, add_i64(b, row, static_cast<int64_t>(c) * lanes), key_widths[c]));
      for (int64_t y = 0; y < t.rows; ++y)
        scores.broadcast_fma(b, y, load_scalar(b, in.q, add_i64(b, add_i64(b, t.q_base, y * K), d)),
                             kv);
    });
    // Per row: scale and mask, the running max and sum, the exponentials to the scratch, the
    // output's correction.
    for (int64_t y = 0; y < t.rows; ++y) {
      std::vector<llvm::Value*> row;
      for (size_t c = 0; c < key_widths.size(); ++c) {
        llvm::Value* x = b.CreateFMul(scores.value(b, y, c), splat(b, key_widths[c], scale));
        if (w.has_mask()) {
          llvm::Value* at = add_i64(b, t.mask_base, static_cast<int64_t>(c) * lanes);
          if (w.mask_rows > 1) at = add_i64(b, at, y * N);
          x = b.CreateFAdd(x, load_vector(b, in.mask, add_i64(b, at, n0), key_widths[c]));
        }
        row.push_back(x);
      }
      llvm::Value* old_max = b.CreateLoad(f32, row_max_of[y]);
      llvm::Value* new_max = max_of(b, old_max, row_max(b, lane_wise(b, row, true)));
      // Every key so far masked by -infinity (a padding mask): exponentials against 0, all 0,
      // where -inf - -inf would make them NaN.
      llvm::Value* lowest = llvm::ConstantFP::get(f32, -std::numeric_limits<float>::infinity());
      llvm::Value* base = b.CreateSelect(b.CreateFCmpOEQ(new_max, lowest),
                                         llvm::ConstantFP::get(f32, 0.0), new_max);
      llvm::Value* correction = exp_f32(b, b.CreateFSub(old_max, base));
      std::vector<llvm::Value*> exps;
      for (size_t c = 0; c < key_widths.size(); ++c) {
        exps.push_back(exp_f32(b, b.CreateFSub(row[c], splat(b, key_widths[c], base))));
        store_vector(b, exps.back(), scratch, i64(b, y * xi + static_cast<int64_t>(c) * lanes),
                     key_widths[c]);
      }
      llvm::Value* sum = llvm::ConstantFP::get(f32, 0.0);
      for (llvm::Value* partial : lane_wise(b, exps, false))
        sum = b.CreateFAdd(sum, horizontal_sum(b, partial));
      b.CreateStore(b.CreateFAdd(b.CreateFMul(b.CreateLoad(f32, row_sum_of[y]), correction), sum),
                    row_sum_of[y]);
      b.CreateStore(new_max, row_max_of[y]);
      for (size_t c = 0; c < value_widths.size(); ++c)
        acc.set(b, y, c, b.CreateFMul(acc.value(b, y, c), splat(b, value_widths[c], correction)));
    }
    // The block's exponentials times v's rows.
    emit_for(b, i64(b, 0), i64(b, keys), "key", [&](llvm::Value* j) {
      llvm::Value* row = add_i64(b, t.v_base, mul_i64(b, add_i64(b, n0, j), Dv));
      std::vector<llvm::Value*> vv;
      for (size_t c = 0; c < value_widths.size(); ++c)
        vv.push_back(load_vector(b, in.v, add_i64(b, row, static_cast<int64_t>(c) * lanes),
                                 value_widths[c]));
      for (int64_t y = 0; y < t.rows; ++y)
        acc.broadcast_fma(b, y, load_scalar(b, scratch, add_i64(b, j, y * xi)), vv);
    });
  };
  // A tile of `rows` rows over every key, then its rows divided by their sums and stored.
  auto emit_tile = [&](Tile t, int64_t rows) {
    t.rows = rows;
    for (int64_t y = 0; y < rows; ++y) {
      b.CreateStore(llvm::ConstantFP::get(f32, -std::numeric_limits<float>::infinity()),
                    row_max_of[y]);
      b.CreateStore(llvm::ConstantFP::get(f32, 0.0), row_sum_of[y]);
    }
    RegisterTile acc(b, rows, value_widths);
    emit_for(b, i64(b, 0), i64(b, full_blocks), "key_block",
             [&](llvm::Value* block) { emit_block(t, acc, mul_i64(b, block, xi), xi); });
    if (tail_keys > 0) emit_block(t, acc, i64(b, full_blocks * xi), tail_keys);
    for (int64_t y = 0; y < rows; ++y) {
      llvm::Value* inverse =
          b.CreateFDiv(llvm::ConstantFP::get(f32, 1.0), b.CreateLoad(f32, row_sum_of[y]));
      for (size_t c = 0; c < value_widths.size(); ++c) {
        llvm::Value* col = i64(b, static_cast<int64_t>(c) * lanes);
        llvm::Value* offset = add_i64(b, mul_i64(b, add_i64(b, t.row0, y), Dv), col);
        llvm::Value* value = b.CreateFMul(acc.value(b, y, c), splat(b, value_widths[c], inverse));
        store_vector(b, apply_epilogue(b, value, args, col, offset, value_widths[c]), args.out,
                     offset, value_widths[c]);
      }
    }
  };

  emit_for(b, args.begin, args.end, "fused", [&](llvm::Value* fused) {
    Tile t{yi, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
    t.batch = b.CreateSDiv(fused, i64(b, tiles));
    llvm::Value* tile = b.CreateSRem(fused, i64(b, tiles));
    t.y0 = mul_i64(b, tile, yi);
    t.row0 = add_i64(b, mul_i64(b, t.batch, M), t.y0);  // q's and out's first row
    t.q_base = mul_i64(b, t.row0, K);
    t.k_base = mul_i64(b, t.batch, K * N);
    t.v_base = mul_i64(b, t.batch, N * Dv);
    if (w.has_mask()) {
      t.mask_base = mul_i64(b, b.CreateSDiv(t.batch, i64(b, heads_per_mask)), w.mask_rows * N);
      if (w.mask_rows > 1) t.mask_base = add_i64(b, t.mask_base, mul_i64(b, t.y0, N));
    }
    if (M % yi == 0) {
      emit_tile(t, yi);
    } else {
      emit_if_else(
          b, b.CreateICmpEQ(tile, i64(b, tiles - 1)), "last_tile", [&] { emit_tile(t, M % yi); },
          [&] { emit_tile(t, yi); });
    }
  });
}

}  // namespace tensortune::codegen::emit
