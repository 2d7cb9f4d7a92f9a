#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <optional>
#include <vector>

#include "compiler/codegen/llvm/column_classes.h"
#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::Conv2dSchedule;
using schedule_space::Conv2dWorkload;

/// Emits the kernel. Rows outside the input (top and bottom padding) read a zero row: the row
/// pointer of each (tile row, kh) is selected once per kh step, which costs nothing in the
/// inner loop and needs no separate code for border rows.
class ConvEmitter {
 public:
  ConvEmitter(llvm::IRBuilder<>& b, llvm::Module& m, const AnchorArgs& args,
              const Conv2dWorkload& w, const Conv2dSchedule& s, int lanes)
      : b_(b), w_(w), s_(s), lanes_(lanes), args_(args) {
    data_ = args.data;
    weight_ = args.weight;
    out_ = args.out;
    icc_ = w.in_channels / s.ic_bn;
    occ_ = w.out_channels / s.oc_bn;
    oh_ = w.out_height();
    ow_ = w.out_width();
    row_tiles_ = (oh_ + s.reg_h - 1) / s.reg_h;
    widths_ = lane_widths(s.oc_bn, lanes);
    columns_ = classify_columns(w, s.reg_n);
    if (s.prefetch_weights)
      prefetch_ =
          llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::prefetch, {b.getInt8PtrTy()});
    const bool rows_may_leave_input =
        w.pad_top > 0 || w.pad_bottom > 0 ||
        (oh_ - 1) * w.stride_h + (w.kernel_h - 1) * w.dilation_h >= w.in_height;
    if (rows_may_leave_input) {
      auto* row_type =
          llvm::ArrayType::get(b.getFloatTy(), static_cast<uint64_t>(w.in_width * s.ic_bn));
      zero_row_ = new llvm::GlobalVariable(m, row_type, true, llvm::GlobalValue::InternalLinkage,
                                           llvm::ConstantAggregateZero::get(row_type), "zero_row");
      zero_row_->setAlignment(llvm::Align(64));
    }
  }

  void emit(llvm::Value* begin, llvm::Value* end) {
    if (s_.split_reduction) {
      emit_split(begin, end);
      return;
    }
    emit_for(b_, begin, end, "fused", [&](llvm::Value* f) {
      const TaskIndex task = task_index(f, row_tiles_);
      emit_row_tile(task, task.group,
                    {i64(b_, 0), i64(b_, icc_), Pass::Init::kZero, nullptr,
                     /*to_scratch=*/false});
    });
  }

 private:
  /// Where a register tile's sums start and end up: a whole reduction (zero to the epilogue and
  /// the output), or one slice of a split one (to and from the task's partial sums).
  struct Pass {
    llvm::Value *ic_lo, *ic_hi;  ///< input-channel chunks summed
    enum class Init { kZero, kPartial, kZeroOrPartial } init;
    llvm::Value* first = nullptr;     ///< kZeroOrPartial: i1, true for the first slice
    bool to_scratch;                  ///< store the partial sums, not the epilogue's result
    llvm::Value* task_oh0 = nullptr;  ///< first output row of the task (partial-sum row 0)
  };

  struct TaskIndex {
    llvm::Value *n, *occ, *group;
  };

  /// f = (n * groups + group) * occ + oc_chunk with oc_inner, else (n * occ + oc_chunk) *
  /// groups + group; a group is one row tile unless the reduction is split.
  TaskIndex task_index(llvm::Value* f, int64_t groups) {
    TaskIndex t;
    if (s_.oc_inner) {
      t.occ = b_.CreateSRem(f, i64(b_, occ_), "oc_chunk");
      llvm::Value* rest = b_.CreateSDiv(f, i64(b_, occ_));
      t.group = b_.CreateSRem(rest, i64(b_, groups), "row_group");
      t.n = b_.CreateSDiv(rest, i64(b_, groups), "n");
    } else {
      t.group = b_.CreateSRem(f, i64(b_, groups), "row_group");
      llvm::Value* rest = b_.CreateSDiv(f, i64(b_, groups));
      t.occ = b_.CreateSRem(rest, i64(b_, occ_), "oc_chunk");
      t.n = b_.CreateSDiv(rest, i64(b_, occ_), "n");
    }
    return t;
  }

  /// One task of a split reduction: for each slice of input channels, every row tile of the
  /// task, their sums kept in a stack buffer between slices; the last slice applies the
  /// epilogue and writes the output.
  void emit_split(llvm::Value* begin, llvm::Value* end) {
    const schedule_space::ReductionSlicing r = schedule_space::reduction_slicing(w_, s_);
    const int64_t partial_floats = r.row_tiles_per_task * s_.reg_h * ow_ * s_.oc_bn;
    auto* partial_type =
        llvm::ArrayType::get(b_.getFloatTy(), static_cast<uint64_t>(partial_floats));
    llvm::AllocaInst* partial = entry_alloca(b_, partial_type, "partial_sums");
    partial->setAlignment(llvm::Align(64));
    partial_ = b_.CreateBitCast(partial, b_.getFloatTy()->getPointerTo());
    emit_for(b_, begin, end, "fused", [&](llvm::Value* f) {
      const TaskIndex task = task_index(f, r.row_groups);
      llvm::Value* tile_lo = mul_i64(b_, task.group, r.row_tiles_per_task);
      llvm::Value* tile_hi = b_.CreateSelect(
          b_.CreateICmpSLT(add_i64(b_, tile_lo, r.row_tiles_per_task), i64(b_, row_tiles_)),
          add_i64(b_, tile_lo, r.row_tiles_per_task), i64(b_, row_tiles_));
      llvm::Value* task_oh0 = mul_i64(b_, tile_lo, s_.reg_h);
      auto tiles = [&](const Pass& pass) {
        emit_for(b_, tile_lo, tile_hi, "oh_tile",
                 [&](llvm::Value* t) { emit_row_tile(task, t, pass); });
      };
      emit_for(b_, i64(b_, 0), i64(b_, r.slices - 1), "slice", [&](llvm::Value* slice) {
        llvm::Value* lo = mul_i64(b_, slice, r.chunks_per_slice);
        tiles({lo, add_i64(b_, lo, r.chunks_per_slice), Pass::Init::kZeroOrPartial,
               b_.CreateICmpEQ(slice, i64(b_, 0)), /*to_scratch=*/true, task_oh0});
      });
      tiles({i64(b_, (r.slices - 1) * r.chunks_per_slice), i64(b_, icc_), Pass::Init::kPartial,
             nullptr, /*to_scratch=*/false, task_oh0});
    });
  }

  /// Row tile t of the task (its last one may have fewer rows).
  void emit_row_tile(const TaskIndex& task, llvm::Value* t, const Pass& pass) {
    const int64_t tail_rows = oh_ % s_.reg_h;
    llvm::Value* oh0 = mul_i64(b_, t, s_.reg_h);
    if (tail_rows == 0) {
      emit_row(task.n, task.occ, oh0, s_.reg_h, pass);
      return;
    }
    emit_if_else(
        b_, b_.CreateICmpEQ(t, i64(b_, row_tiles_ - 1)), "rows_tail",
        [&] { emit_row(task.n, task.occ, oh0, tail_rows, pass); },
        [&] { emit_row(task.n, task.occ, oh0, s_.reg_h, pass); });
  }

  void emit_row(llvm::Value* n, llvm::Value* occ, llvm::Value* oh0, int64_t rows,
                const Pass& pass) {
    for (const auto& c : columns_) {
      if (c.runtime) {
        emit_for(b_, i64(b_, c.lo), i64(b_, c.hi), "ow_tile", [&](llvm::Value* ct) {
          emit_tile({n, occ, oh0, mul_i64(b_, ct, s_.reg_n), std::nullopt, rows, c.size}, pass);
        });
      } else {
        const int64_t ow0 = c.tile * s_.reg_n;
        emit_tile({n, occ, oh0, i64(b_, ow0), ow0, rows, c.size}, pass);
      }
    }
  }

  bool col_valid(std::optional<int64_t> ow0c, int64_t p, int64_t kw) const {
    if (!ow0c) return true;
    const int64_t iw = (*ow0c + p) * w_.stride_w + kw * w_.dilation_w - w_.pad_left;
    return iw >= 0 && iw < w_.in_width;
  }

  struct Tile {
    llvm::Value *n, *occ, *oh0, *ow0;
    std::optional<int64_t> ow0c;  ///< set for border/tail column tiles
    int64_t rows, cols;
  };

  size_t acc_index(const Tile& t, int64_t r, int64_t p, size_t v) const {
    return (static_cast<size_t>(r * t.cols + p)) * widths_.size() + v;
  }

  void emit_tile(const Tile& t, const Pass& pass) {
    LoopState acc = initial_sums(t, pass);
    acc = emit_for_carried(
        b_, pass.ic_lo, pass.ic_hi, "ic_chunk", acc, [&](llvm::Value* icc, const LoopState& a0) {
          // data[n][icc] plane, in floats.
          llvm::Value* plane = mul_i64(b_, add_i64(b_, mul_i64(b_, t.n, icc_), icc), w_.in_height);
          return emit_for_carried(
              b_, i64(b_, 0), i64(b_, w_.kernel_h), "kh", a0,
              [&](llvm::Value* kh, const LoopState& a1) {
                std::vector<llvm::Value*> rows = row_pointers(t, plane, kh);
                if (t.ow0c || s_.unroll_kw || w_.kernel_w == 1) {
                  return emit_for_carried(b_, i64(b_, 0), i64(b_, s_.ic_bn), "ic_block", a1,
                                          [&](llvm::Value* icb, const LoopState& a2) {
                                            LoopState a = a2;
                                            for (int64_t kw = 0; kw < w_.kernel_w; ++kw)
                                              emit_fmas(t, rows, icc, kh, i64(b_, kw), kw, icb, a);
                                            return a;
                                          });
                }
                return emit_for_carried(b_, i64(b_, 0), i64(b_, w_.kernel_w), "kw", a1,
                                        [&](llvm::Value* kw, const LoopState& a2) {
                                          return emit_for_carried(
                                              b_, i64(b_, 0), i64(b_, s_.ic_bn), "ic_block", a2,
                                              [&](llvm::Value* icb, const LoopState& a3) {
                                                LoopState a = a3;
                                                emit_fmas(t, rows, icc, kh, kw, std::nullopt, icb,
                                                          a);
                                                return a;
                                              });
                                        });
              });
        });
    if (pass.to_scratch) {
      store_partial(t, pass, acc);
    } else {
      emit_store(t, acc);
    }
  }

  /// Offset in the task's partial sums of (row r, column p, vector v) of tile t: rows counted
  /// from the task's first output row, each ow_ * oc_bn floats.
  llvm::Value* partial_offset(const Tile& t, const Pass& pass, int64_t r, int64_t p, size_t v) {
    llvm::Value* row = add_i64(b_, b_.CreateSub(t.oh0, pass.task_oh0), r);
    llvm::Value* col = add_i64(b_, t.ow0, p);
    return add_i64(b_, mul_i64(b_, add_i64(b_, mul_i64(b_, row, ow_), col), s_.oc_bn),
                   static_cast<int64_t>(v) * lanes_);
  }

  LoopState initial_sums(const Tile& t, const Pass& pass) {
    LoopState acc;
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t p = 0; p < t.cols; ++p)
        for (size_t v = 0; v < widths_.size(); ++v) {
          llvm::Value* zero =
              llvm::Constant::getNullValue(llvm::FixedVectorType::get(b_.getFloatTy(), widths_[v]));
          if (pass.init == Pass::Init::kZero) {
            acc.push_back(zero);
            continue;
          }
          llvm::Value* sum =
              load_vector(b_, partial_, partial_offset(t, pass, r, p, v), widths_[v]);
          // The first slice finds the buffer holding the previous task's sums (or nothing).
          if (pass.init == Pass::Init::kZeroOrPartial) sum = b_.CreateSelect(pass.first, zero, sum);
          acc.push_back(sum);
        }
    return acc;
  }

  void store_partial(const Tile& t, const Pass& pass, const LoopState& acc) {
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t p = 0; p < t.cols; ++p)
        for (size_t v = 0; v < widths_.size(); ++v)
          store_vector(b_, acc[acc_index(t, r, p, v)], partial_, partial_offset(t, pass, r, p, v),
                       widths_[v]);
  }

  /// Pointers to input row ih = (oh0 + r) * SH + kh * DH - PT of the current channel chunk,
  /// or to the zero row when ih is outside the input.
  std::vector<llvm::Value*> row_pointers(const Tile& t, llvm::Value* plane, llvm::Value* kh) {
    std::vector<llvm::Value*> rows;
    llvm::Value* ih0 = add_i64(b_, mul_i64(b_, t.oh0, w_.stride_h),
                               add_i64(b_, mul_i64(b_, kh, w_.dilation_h), -w_.pad_top));
    llvm::Value* zero =
        zero_row_ ? b_.CreateBitCast(zero_row_, b_.getFloatTy()->getPointerTo()) : nullptr;
    for (int64_t r = 0; r < t.rows; ++r) {
      llvm::Value* ih = add_i64(b_, ih0, r * w_.stride_h);
      llvm::Value* offset = mul_i64(b_, add_i64(b_, plane, ih), w_.in_width * s_.ic_bn);
      llvm::Value* ptr = b_.CreateGEP(b_.getFloatTy(), data_, offset);
      if (zero) {
        llvm::Value* inside = b_.CreateICmpULT(ih, i64(b_, w_.in_height));
        ptr = b_.CreateSelect(inside, ptr, zero);
      }
      rows.push_back(ptr);
    }
    return rows;
  }

  void emit_fmas(const Tile& t, const std::vector<llvm::Value*>& rows, llvm::Value* icc,
                 llvm::Value* kh, llvm::Value* kw, std::optional<int64_t> kwc, llvm::Value* icb,
                 LoopState& acc) {
    const size_t nv = widths_.size();
    if (kwc) {
      bool any = false;
      for (int64_t p = 0; p < t.cols; ++p) any |= col_valid(t.ow0c, p, *kwc);
      if (!any) return;
    }
    // weight[occ][icc][kh][kw][icb][oc]
    llvm::Value* woff =
        add_i64(b_, mul_i64(b_, add_i64(b_, mul_i64(b_, t.occ, icc_), icc), w_.kernel_h), kh);
    woff = mul_i64(
        b_,
        add_i64(b_, mul_i64(b_, add_i64(b_, mul_i64(b_, woff, w_.kernel_w), kw), s_.ic_bn), icb),
        s_.oc_bn);
    std::vector<llvm::Value*> wv;
    for (size_t v = 0; v < nv; ++v)
      wv.push_back(load_vector(b_, weight_, add_i64(b_, woff, v * lanes_), widths_[v]));
    if (prefetch_) {
      // The same weights of the next input-channel chunk, one 64-byte line at a time. Past the
      // last chunk this is the next output chunk's first, or past the end: a prefetch of any
      // address is harmless.
      const int64_t ahead = w_.kernel_h * w_.kernel_w * s_.ic_bn * s_.oc_bn;
      for (int64_t line = 0; line < (s_.oc_bn + 15) / 16; ++line) {
        llvm::Value* ptr =
            b_.CreateGEP(b_.getFloatTy(), weight_, add_i64(b_, woff, ahead + line * 16));
        b_.CreateCall(prefetch_, {b_.CreateBitCast(ptr, b_.getInt8PtrTy()), b_.getInt32(0),
                                  b_.getInt32(2), b_.getInt32(1)});
      }
    }
    // Within a row: element (iw, icb) at iw * ic_bn + icb, iw = ow0 * SW + kw * DW - PL + p * SW.
    llvm::Value* col0 = add_i64(b_, mul_i64(b_, t.ow0, w_.stride_w),
                                add_i64(b_, mul_i64(b_, kw, w_.dilation_w), -w_.pad_left));
    llvm::Value* base = add_i64(b_, mul_i64(b_, col0, s_.ic_bn), icb);
    for (int64_t r = 0; r < t.rows; ++r) {
      llvm::Value* row = b_.CreateGEP(b_.getFloatTy(), rows[r], base);
      for (int64_t p = 0; p < t.cols; ++p) {
        if (kwc && !col_valid(t.ow0c, p, *kwc)) continue;
        llvm::Value* ptr = b_.CreateGEP(b_.getFloatTy(), row, i64(b_, p * w_.stride_w * s_.ic_bn));
        llvm::Value* x = b_.CreateAlignedLoad(b_.getFloatTy(), ptr, llvm::Align(4));
        llvm::Value* splat_full = nullptr;
        for (size_t v = 0; v < nv; ++v) {
          llvm::Value* xs;
          if (widths_[v] == lanes_) {
            if (!splat_full) splat_full = b_.CreateVectorSplat(lanes_, x);
            xs = splat_full;
          } else {
            xs = b_.CreateVectorSplat(widths_[v], x);
          }
          llvm::Value*& a = acc[acc_index(t, r, p, v)];
          a = fma(b_, xs, wv[v], a);
        }
      }
    }
  }

  void emit_store(const Tile& t, const LoopState& acc) {
    const size_t nv = widths_.size();
    llvm::Value* channel0 = mul_i64(b_, t.occ, s_.oc_bn);
    llvm::Value* plane = mul_i64(b_, add_i64(b_, mul_i64(b_, t.n, occ_), t.occ), oh_);
    for (int64_t r = 0; r < t.rows; ++r) {
      llvm::Value* row = mul_i64(b_, add_i64(b_, plane, add_i64(b_, t.oh0, r)), ow_);
      for (int64_t p = 0; p < t.cols; ++p) {
        llvm::Value* base = mul_i64(b_, add_i64(b_, row, add_i64(b_, t.ow0, p)), s_.oc_bn);
        for (size_t v = 0; v < nv; ++v) {
          llvm::Value* offset = add_i64(b_, base, v * lanes_);
          llvm::Value* val = apply_epilogue(b_, acc[acc_index(t, r, p, v)], args_,
                                            add_i64(b_, channel0, v * lanes_), offset, widths_[v]);
          store_vector(b_, val, out_, offset, widths_[v]);
        }
      }
    }
  }

  llvm::IRBuilder<>& b_;
  const Conv2dWorkload& w_;
  const Conv2dSchedule& s_;
  int lanes_;
  const AnchorArgs& args_;
  llvm::Value *data_, *weight_, *out_;
  llvm::GlobalVariable* zero_row_ = nullptr;
  llvm::Value* partial_ = nullptr;      ///< float*: a split reduction's partial sums
  llvm::Function* prefetch_ = nullptr;  ///< llvm.prefetch, declared when the schedule prefetches
  int64_t icc_, occ_, oh_, ow_;
  int64_t row_tiles_;  ///< register-tile rows of the output (the last may be short)
  std::vector<int> widths_;
  std::vector<ColumnClass> columns_;
};

}  // namespace

void emit_conv2d_nchwc(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                       const Conv2dWorkload& w, const Conv2dSchedule& s, int lanes) {
  ConvEmitter emitter(b, m, args, w, s, lanes);
  emitter.emit(args.begin, args.end);
}

void emit_conv2d_nchwc_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                            const schedule_space::Task& task,
                            const schedule_space::ConfigSpace& space,
                            const schedule_space::Config& config) {
  emit_conv2d_nchwc(m, b, args, std::get<Conv2dWorkload>(task.workload),
                    schedule_space::conv2d_nchwc_schedule(space, config), task.target.vector_lanes);
}

}  // namespace tensortune::codegen::emit
