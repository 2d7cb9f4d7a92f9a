// Depthwise convolution in NCHW[x]c -> NCHW[y]c (x = ic_bn, y = oc_bn): output channel c reads
// only input channel c, so there is no reduction over channels and the output block is the
// vector. One parallel iteration is one output row of one output block; the row is cut into
// tiles of reg_n columns whose accumulators stay in registers across the kh x kw taps. Tiles
// of rows whose every tap reads the input run without bounds checks; elsewhere taps outside the
// input read a clamped address and are zeroed with a select (which LLVM makes a branch per
// vector: checking every tile cost up to half the time of a 56x56 layer).
//
// An output block reads the input block that holds its channels (x a multiple of y: a slice of
// one block, at an offset known at run time) or the y / x whole blocks that do (y a multiple of
// x: the pieces are known at compile time and joined into one vector). Blocks that do not nest
// (the template's space marks them invalid, but a record may name one) read lane by lane.
#include <llvm/IR/Module.h>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"
#include "schedule_space/depthwise_conv2d_nchwc_template.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::Conv2dWorkload;
using schedule_space::DepthwiseSchedule;

/// A contiguous run of channels of one input block: `width` lanes at `offset` floats from the
/// output block's first input channel, landing at lane `lane` of the vector being built.
struct Run {
  int64_t offset = 0;
  int width = 0, lane = 0;
};

class DepthwiseEmitter {
 public:
  DepthwiseEmitter(llvm::IRBuilder<>& b, const AnchorArgs& args, const Conv2dWorkload& w,
                   const DepthwiseSchedule& s, int lanes)
      : b_(b), args_(args), w_(w), s_(s), lanes_(lanes), widths_(lane_widths(s.oc_bn, lanes)) {
    // Within a slice of one input block, a piece is one run; across blocks, it is cut where a
    // block ends (compile-time offsets, since the output block starts at a block boundary).
    const int64_t plane = w.in_height * w.in_width * s.ic_bn;  // floats of one input block
    for (size_t v = 0; v < widths_.size(); ++v) {
      std::vector<Run> runs;
      const int64_t first = static_cast<int64_t>(v) * lanes;
      for (int lane = 0; lane < widths_[v] && nested();) {
        const int64_t c = first + lane;
        if (s.ic_bn % s.oc_bn == 0) {
          runs.push_back({c, widths_[v], 0});
          break;
        }
        const int width =
            static_cast<int>(std::min<int64_t>(widths_[v] - lane, s.ic_bn - c % s.ic_bn));
        runs.push_back({c / s.ic_bn * plane + c % s.ic_bn, width, lane});
        lane += width;
      }
      runs_.push_back(std::move(runs));
    }
  }

  void emit() {
    const int64_t OH = w_.out_height(), OW = w_.out_width();
    const int64_t ocb = w_.out_channels / s_.oc_bn, icb = w_.in_channels / s_.ic_bn;
    emit_for(b_, args_.begin, args_.end, "row", [&](llvm::Value* f) {
      llvm::Value* oh = b_.CreateSRem(f, i64(b_, OH), "oh");
      llvm::Value* rest = b_.CreateSDiv(f, i64(b_, OH));
      llvm::Value* cc = b_.CreateSRem(rest, i64(b_, ocb), "chunk");
      llvm::Value* n = b_.CreateSDiv(rest, i64(b_, ocb), "n");
      // The input block holding the output block's first channel, and the channel's lane in it.
      llvm::Value* in_block = nullptr;
      llvm::Value* in_lane = i64(b_, 0);
      if (s_.ic_bn == s_.oc_bn) {
        in_block = cc;
      } else if (s_.ic_bn % s_.oc_bn == 0) {
        const int64_t per_block = s_.ic_bn / s_.oc_bn;
        in_block = b_.CreateSDiv(cc, i64(b_, per_block));
        in_lane = mul_i64(b_, b_.CreateSRem(cc, i64(b_, per_block)), s_.oc_bn);
      } else if (s_.oc_bn % s_.ic_bn == 0) {
        in_block = mul_i64(b_, cc, s_.oc_bn / s_.ic_bn);
      } else {
        in_block = i64(b_, 0);  // load_piece finds each channel's block
      }
      plane_ = mul_i64(b_, add_i64(b_, mul_i64(b_, n, icb), in_block), w_.in_height);
      in_lane_ = in_lane;
      oh_ = oh;
      cc_ = cc;
      llvm::Value* out_row =
          mul_i64(b_, add_i64(b_, mul_i64(b_, add_i64(b_, mul_i64(b_, n, ocb), cc), OH), oh), OW);
      // Tiles whose taps all fall inside the input (in columns here, in rows at run time) skip
      // the bounds checks: a clamp and a select per tap that LLVM turns into a branch per vector.
      const int64_t tiles = OW / s_.reg_n;
      int64_t first_inside = 0;
      while (first_inside < tiles && !columns_inside(first_inside)) ++first_inside;
      int64_t end_inside = first_inside;
      while (end_inside < tiles && columns_inside(end_inside)) ++end_inside;
      emit_tiles(out_row, 0, first_inside, true);
      if (first_inside < end_inside) {
        llvm::Value* top = add_i64(b_, mul_i64(b_, oh, w_.stride_h), -w_.pad_top);
        llvm::Value* bottom = add_i64(b_, top, (w_.kernel_h - 1) * w_.dilation_h);
        llvm::Value* rows_inside = b_.CreateAnd(b_.CreateICmpSGE(top, i64(b_, 0)),
                                                b_.CreateICmpSLT(bottom, i64(b_, w_.in_height)));
        emit_if_else(
            b_, rows_inside, "rows_inside",
            [&] { emit_tiles(out_row, first_inside, end_inside, false); },
            [&] { emit_tiles(out_row, first_inside, end_inside, true); });
      }
      emit_tiles(out_row, end_inside, tiles, true);
    });
  }

 private:
  /// Whether every tap of tile `tile`'s columns reads a column of the input (not the padding).
  bool columns_inside(int64_t tile) const {
    const int64_t first = tile * s_.reg_n * w_.stride_w - w_.pad_left;
    const int64_t last =
        ((tile + 1) * s_.reg_n - 1) * w_.stride_w - w_.pad_left + (w_.kernel_w - 1) * w_.dilation_w;
    return first >= 0 && last < w_.in_width;
  }

  /// Output tiles [lo, hi) of the current row; `checked`: taps may fall in the padding.
  void emit_tiles(llvm::Value* out_row, int64_t lo, int64_t hi, bool checked) {
    if (lo >= hi) return;
    checked_ = checked;
    emit_for(b_, i64(b_, lo), i64(b_, hi), "ow_tile", [&](llvm::Value* tile) {
      ow0_ = mul_i64(b_, tile, s_.reg_n);
      LoopState acc;
      for (int64_t p = 0; p < s_.reg_n; ++p)
        for (int wd : widths_)
          acc.push_back(
              llvm::Constant::getNullValue(llvm::FixedVectorType::get(b_.getFloatTy(), wd)));
      for (int64_t kh = 0; kh < w_.kernel_h; ++kh) {
        if (s_.unroll_kw || w_.kernel_w == 1) {
          for (int64_t kw = 0; kw < w_.kernel_w; ++kw) tap(kh, i64(b_, kw), acc);
        } else {
          acc = emit_for_carried(b_, i64(b_, 0), i64(b_, w_.kernel_w), "kw", acc,
                                 [&](llvm::Value* kw, const LoopState& a) {
                                   LoopState next = a;
                                   tap(kh, kw, next);
                                   return next;
                                 });
        }
      }
      store(out_row, acc);
    });
  }

  /// acc += input * weight for tap (kh, kw) over the tile's columns.
  void tap(int64_t kh, llvm::Value* kw, LoopState& acc) {
    const int64_t H = w_.in_height, W = w_.in_width, blk = s_.oc_bn;
    llvm::Value* ih = add_i64(b_, mul_i64(b_, oh_, w_.stride_h), kh * w_.dilation_h - w_.pad_top);
    llvm::Value* row_ok = b_.CreateICmpULT(ih, i64(b_, H));
    llvm::Value* row = mul_i64(b_, add_i64(b_, plane_, checked_ ? clamp_index(b_, ih, H) : ih), W);
    // Weights (OC/y, 1, KH, KW, 1, y): this tap's y floats of the block.
    llvm::Value* wbase = add_i64(b_, mul_i64(b_, cc_, w_.kernel_h * w_.kernel_w * blk),
                                 mul_i64(b_, add_i64(b_, kw, kh * w_.kernel_w), blk));
    std::vector<llvm::Value*> wv;
    for (size_t v = 0; v < widths_.size(); ++v)
      wv.push_back(load_vector(b_, args_.weight,
                               add_i64(b_, wbase, static_cast<int64_t>(v) * lanes_), widths_[v]));
    llvm::Value* kw_in = add_i64(b_, mul_i64(b_, kw, w_.dilation_w), -w_.pad_left);
    for (int64_t p = 0; p < s_.reg_n; ++p) {
      llvm::Value* iw = add_i64(b_, mul_i64(b_, add_i64(b_, ow0_, p), w_.stride_w), kw_in);
      llvm::Value* ok = b_.CreateAnd(row_ok, b_.CreateICmpULT(iw, i64(b_, W)));
      llvm::Value* base = add_i64(
          b_, mul_i64(b_, add_i64(b_, row, checked_ ? clamp_index(b_, iw, W) : iw), s_.ic_bn),
          in_lane_);
      for (size_t v = 0; v < widths_.size(); ++v) {
        llvm::Value* x = load_piece(base, v);
        if (checked_) x = b_.CreateSelect(ok, x, llvm::Constant::getNullValue(x->getType()));
        llvm::Value*& a = acc[static_cast<size_t>(p) * widths_.size() + v];
        a = fma(b_, x, wv[v], a);
      }
    }
  }

  /// The input channels of piece v of the output block, at data[base + ...].
  llvm::Value* load_piece(llvm::Value* base, size_t v) {
    const std::vector<Run>& runs = runs_[v];
    const int width = widths_[v];
    if (!nested()) {
      // Channel c = cc * y + v * lanes + i is lane c % x of block c / x, both known at run time.
      const int64_t plane = w_.in_height * w_.in_width * s_.ic_bn;
      llvm::Value* out = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getFloatTy(), width));
      for (int i = 0; i < width; ++i) {
        llvm::Value* c =
            add_i64(b_, mul_i64(b_, cc_, s_.oc_bn), static_cast<int64_t>(v) * lanes_ + i);
        llvm::Value* block = b_.CreateSDiv(c, i64(b_, s_.ic_bn));
        llvm::Value* lane = b_.CreateSRem(c, i64(b_, s_.ic_bn));
        llvm::Value* at = add_i64(b_, add_i64(b_, base, mul_i64(b_, block, plane)), lane);
        out = b_.CreateInsertElement(out, load_scalar(b_, args_.data, at), b_.getInt64(i));
      }
      return out;
    }
    if (runs.size() == 1)
      return load_vector(b_, args_.data, add_i64(b_, base, runs[0].offset), width);
    llvm::Value* out = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getFloatTy(), width));
    for (const Run& r : runs) {
      llvm::Value* part = load_vector(b_, args_.data, add_i64(b_, base, r.offset), r.width);
      // Widen the run to the piece's width, then take its lanes into place.
      std::vector<int> widen(static_cast<size_t>(width), -1);
      for (int i = 0; i < r.width; ++i) widen[static_cast<size_t>(i)] = i;
      llvm::Value* wide = b_.CreateShuffleVector(part, widen);
      std::vector<int> blend(static_cast<size_t>(width));
      for (int i = 0; i < width; ++i)
        blend[static_cast<size_t>(i)] =
            i >= r.lane && i < r.lane + r.width ? width + i - r.lane : i;
      out = b_.CreateShuffleVector(out, wide, blend);
    }
    return out;
  }

  bool nested() const { return s_.ic_bn % s_.oc_bn == 0 || s_.oc_bn % s_.ic_bn == 0; }

  void store(llvm::Value* out_row, const LoopState& acc) {
    for (int64_t p = 0; p < s_.reg_n; ++p)
      for (size_t v = 0; v < widths_.size(); ++v) {
        llvm::Value* offset =
            add_i64(b_, mul_i64(b_, add_i64(b_, out_row, add_i64(b_, ow0_, p)), s_.oc_bn),
                    static_cast<int64_t>(v) * lanes_);
        llvm::Value* channel =
            add_i64(b_, mul_i64(b_, cc_, s_.oc_bn), static_cast<int64_t>(v) * lanes_);
        llvm::Value* val = apply_epilogue(b_, acc[static_cast<size_t>(p) * widths_.size() + v],
                                          args_, channel, offset, widths_[v]);
        store_vector(b_, val, args_.out, offset, widths_[v]);
      }
  }

  llvm::IRBuilder<>& b_;
  const AnchorArgs& args_;
  const Conv2dWorkload& w_;
  const DepthwiseSchedule& s_;
  const int lanes_;
  const std::vector<int> widths_;
  std::vector<std::vector<Run>> runs_;  ///< per piece
  // The current row's values.
  llvm::Value *plane_ = nullptr, *in_lane_ = nullptr, *oh_ = nullptr, *cc_ = nullptr,
              *ow0_ = nullptr;
  bool checked_ = true;  ///< whether the taps being emitted may fall in the padding
};

}  // namespace

void emit_depthwise_nchwc(llvm::IRBuilder<>& b, const AnchorArgs& args, const Conv2dWorkload& w,
                          const DepthwiseSchedule& s, int lanes) {
  DepthwiseEmitter(b, args, w, s, lanes).emit();
}

void emit_depthwise_conv2d_nchwc_task(llvm::Module&, llvm::IRBuilder<>& b, const AnchorArgs& args,
                                      const schedule_space::Task& task,
                                      const schedule_space::ConfigSpace& space,
                                      const schedule_space::Config& config) {
  emit_depthwise_nchwc(b, args, std::get<Conv2dWorkload>(task.workload),
                       schedule_space::depthwise_conv2d_nchwc_schedule(space, config),
                       task.target.vector_lanes);
}

}  // namespace tensortune::codegen::emit
