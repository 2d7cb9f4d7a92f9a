// conv2d_NCHWc_int8.x86: uint8 data NCHW[x]c, int8 kernel OIHW[x/4]i[y]o4i, int32 output
// NCHW[y]c, summed exactly in int32.
//
// The reduction runs over groups of four input channels. For each block of B output channels
// the accumulator is kept "unreduced", B * R int32 lanes that hold partial sums of R of the
// four products of each channel, and is folded to B lanes once, at the store:
// - with AVX-512 VNNI, B = 16 and R = 1: `vpdpbusd` multiplies the 4 data bytes (unsigned) with
//   each channel's 4 weights (signed) and adds all four into the int32 lane, exactly (B = 8,
//   its 256-bit form, for blocks of 8);
// - with AVX2 and weights in [-64, 64] (Precision::kUInt8Int7), B = 8 and R = 1: `vpmaddubsw`
//   multiplies the data bytes with the weight bytes and adds each pair into an int16, which
//   cannot saturate (255 * 64 * 2 = 32640), then `vpmaddwd` by ones adds the two pairs into the
//   int32 lane (AutoTVM's non-VNNI form);
// - with AVX2 and full-range weights, B = 8 and R = 2: `vpmaddwd` multiplies the sign-extended
//   weights of channel pairs with the zero-extended data and adds each pair into one int32,
//   exactly (`vpmaddubsw` would saturate: 255 * 127 * 2 does not fit in int16);
// - elsewhere, B = 8 and R = 4: plain widened multiplies and adds, which LLVM lowers on any CPU.
// Where the CPU has AMX (and the process may use it), configs that suit it (runs_on_amx_tiles)
// run on the tile unit instead (int8_amx_tile.h): the same layouts, up to 16 pixels x 16
// channels x 64 input channels per instruction.
//
// In a network the data's padding holds its quantized zero point (AnchorArgs::pad_value): rows
// outside the input read a row of it, and the taps that border tiles drop read it as a
// constant. The epilogue then applies at the store: int32 channel additions (the zero point's
// correction), the conversion to float, and the float steps of every anchor kernel.
#include <llvm/ADT/StringMap.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Host.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/llvm/column_classes.h"
#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/int8_amx_tile.h"
#include "compiler/codegen/llvm/ir_helpers.h"
#include "support/error.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::Conv2dInt8Schedule;
using schedule_space::Conv2dWorkload;

// The kernels are compiled for the host (llvm_target.cc): its features choose the form.
bool host_has(const char* feature) {
  static const llvm::StringMap<bool> features = [] {
    llvm::StringMap<bool> f;
    if (!llvm::sys::getHostCPUFeatures(f)) f.clear();
    return f;
  }();
  return features.lookup(feature);
}

enum class DotForm { kAmx, kVnni, kPairs, kBytePairs, kWidened };

llvm::Value* shuffle(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* c,
                     const std::vector<int>& mask) {
  return b.CreateShuffleVector(a, c, mask);
}

class Int8ConvEmitter {
 public:
  Int8ConvEmitter(llvm::IRBuilder<>& b, llvm::Module& m, const AnchorArgs& args,
                  const Conv2dWorkload& w, const Conv2dInt8Schedule& s, bool channels_last_out)
      : b_(b), m_(m), args_(args), w_(w), s_(s), channels_last_out_(channels_last_out) {
    pad_ = args.pad_value;
    TT_CHECK(pad_ >= 0 && pad_ <= 255) << "pad value " << pad_ << " is not a uint8";
    for (const auto& op : args.epilogue)
      float_out_ |= op.kind == epilogue::EpilogueOp::Kind::kToFloat;
    byte_out_ = epilogue::stores_bytes(args.epilogue);
    const bool narrow_weights = w.precision == schedule_space::Precision::kUInt8Int7;
    // VNNI accumulates 16 channels per 512-bit vector; blocks of 8 (channels not a multiple of
    // 16: a classifier of 1000) take its 256-bit form (AVX-512 VL), not the AVX2 forms, which
    // run a third as fast.
    const bool vnni = host_has("avx512vnni") && (s.oc_bn % 16 == 0 || host_has("avx512vl"));
    columns_ = classify_columns(w, s.reg_n);
    if (host_runs_amx_int8() && schedule_space::runs_on_amx_tiles(s))
      amx_limits_ = plan_amx_kernel(w, s, args.pad_value, columns_);
    const bool amx = amx_limits_.has_value();
    form_ = amx                ? DotForm::kAmx
            : vnni             ? DotForm::kVnni
            : host_has("avx2") ? (narrow_weights ? DotForm::kBytePairs : DotForm::kPairs)
                               : DotForm::kWidened;
    // TT_INT8_DOT names a form to use instead where the CPU has it: "widened" (the portable
    // form on any CPU, how its tests reach it on AVX2 hosts) or "vnni" (the vector form on a CPU
    // with AMX, to compare the two).
    if (const char* forced = std::getenv("TT_INT8_DOT")) {
      if (std::string(forced) == "widened") form_ = DotForm::kWidened;
      if (std::string(forced) == "vnni" && vnni) form_ = DotForm::kVnni;
    }
    padded_ = form_ == DotForm::kAmx && amx_reads_padded_image(w, s);
    block_ = (form_ == DotForm::kVnni || form_ == DotForm::kAmx) && s.oc_bn % 16 == 0 ? 16 : 8;
    reduce_ = form_ == DotForm::kAmx || form_ == DotForm::kVnni || form_ == DotForm::kBytePairs ? 1
              : form_ == DotForm::kPairs                                                        ? 2
                                                                                                : 4;
    TT_CHECK(s.oc_bn % block_ == 0 && s.ic_bn % 4 == 0) << s.oc_bn << " " << s.ic_bn;
    auto* i8p = b.getInt8Ty()->getPointerTo();
    data_ = b.CreateBitCast(args.data, i8p);
    weight_ = b.CreateBitCast(args.weight, i8p);
    out_ = b.CreateBitCast(args.out, out_element()->getPointerTo());
    icc_ = w.in_channels / s.ic_bn;
    occ_ = w.out_channels / s.oc_bn;
    oh_ = w.out_height();
    ow_ = w.out_width();
    blocks_ = s.oc_bn / block_;
    const bool rows_may_leave_input =
        w.pad_top > 0 || w.pad_bottom > 0 ||
        (oh_ - 1) * w.stride_h + (w.kernel_h - 1) * w.dilation_h >= w.in_height;
    if (rows_may_leave_input) {
      auto* row_type =
          llvm::ArrayType::get(b.getInt8Ty(), static_cast<uint64_t>(w.in_width * s.ic_bn));
      std::vector<uint8_t> pad_bytes(static_cast<size_t>(w.in_width * s.ic_bn),
                                     static_cast<uint8_t>(pad_));
      llvm::Constant* fill =
          pad_ == 0
              ? static_cast<llvm::Constant*>(llvm::ConstantAggregateZero::get(row_type))
              : llvm::ConstantDataArray::get(m.getContext(), llvm::ArrayRef<uint8_t>(pad_bytes));
      zero_row_ = new llvm::GlobalVariable(m, row_type, true, llvm::GlobalValue::InternalLinkage,
                                           fill, "pad_row");
      zero_row_->setAlignment(llvm::Align(64));
    }
  }

  void emit(llvm::Value* begin, llvm::Value* end) {
    if (padded_) {
      emit_padded(begin, end);
      return;
    }
    const int64_t row_tiles = (oh_ + s_.reg_h - 1) / s_.reg_h;
    const int64_t tail_rows = oh_ % s_.reg_h;
    emit_for(b_, begin, end, "fused", [&](llvm::Value* f) {
      // f = (n * occ + oc_chunk) * row_tiles + oh_tile, AutoTVM's order.
      llvm::Value* t = b_.CreateSRem(f, i64(b_, row_tiles), "oh_tile");
      llvm::Value* rest = b_.CreateSDiv(f, i64(b_, row_tiles));
      llvm::Value* occ = b_.CreateSRem(rest, i64(b_, occ_), "oc_chunk");
      llvm::Value* n = b_.CreateSDiv(rest, i64(b_, occ_), "n");
      llvm::Value* oh0 = mul_i64(b_, t, s_.reg_h);
      if (tail_rows == 0) {
        emit_row(n, occ, oh0, s_.reg_h);
        return;
      }
      emit_if_else(
          b_, b_.CreateICmpEQ(t, i64(b_, row_tiles - 1)), "rows_tail",
          [&] { emit_row(n, occ, oh0, tail_rows); }, [&] { emit_row(n, occ, oh0, s_.reg_h); });
    });
  }

 private:
  struct Tile {
    llvm::Value *n, *occ, *oh0, *ow0;
    std::optional<int64_t> ow0c;  ///< set for border/tail column tiles
    int64_t rows, cols;
  };

  void emit_row(llvm::Value* n, llvm::Value* occ, llvm::Value* oh0, int64_t rows) {
    for (const auto& c : columns_) {
      if (c.runtime && form_ == DotForm::kAmx) {
        emit_amx_runs(n, occ, oh0, rows, c);
      } else if (c.runtime) {
        emit_for(b_, i64(b_, c.lo), i64(b_, c.hi), "ow_tile", [&](llvm::Value* ct) {
          emit_tile({n, occ, oh0, mul_i64(b_, ct, s_.reg_n), std::nullopt, rows, c.size});
        });
      } else {
        const int64_t ow0 = c.tile * s_.reg_n;
        emit_tile({n, occ, oh0, i64(b_, ow0), ow0, rows, c.size});
      }
    }
  }

  // The padded form (int8_amx_tile.h): a plane (n, occ) at a time, from this thread's padded
  // copy of image n, made when the slice first reaches the image. The fused loop keeps AutoTVM's
  // order and extent: iteration f computes its plane where f is the plane's first row tile or
  // the slice's first iteration, and stores the rows of the plane inside the slice, so that each
  // row is stored once by one thread however the pool cuts the loop.
  void emit_padded(llvm::Value* begin, llvm::Value* end) {
    const int64_t row_tiles = (oh_ + s_.reg_h - 1) / s_.reg_h;
    const std::pair<int64_t, int64_t> extent = amx_padded_extent(w_);
    const int64_t grid_rows = extent.first;
    const int64_t grid_cols = extent.second;
    auto* image_type = llvm::ArrayType::get(
        b_.getInt8Ty(), static_cast<uint64_t>(grid_rows * grid_cols * w_.in_channels));
    llvm::AllocaInst* image_alloca = entry_alloca(b_, image_type, "padded_image");
    image_alloca->setAlignment(llvm::Align(64));
    llvm::Value* image = b_.CreateBitCast(image_alloca, b_.getInt8PtrTy());
    llvm::AllocaInst* copied = entry_alloca(b_, b_.getInt64Ty(), "padded_image_of");
    b_.CreateStore(i64(b_, -1), copied);
    emit_for(b_, begin, end, "fused", [&](llvm::Value* f) {
      llvm::Value* t = b_.CreateSRem(f, i64(b_, row_tiles), "oh_tile");
      llvm::Value* rest = b_.CreateSDiv(f, i64(b_, row_tiles));
      llvm::Value* occ = b_.CreateSRem(rest, i64(b_, occ_), "oc_chunk");
      llvm::Value* n = b_.CreateSDiv(rest, i64(b_, occ_), "n");
      llvm::Value* first =
          b_.CreateOr(b_.CreateICmpEQ(t, i64(b_, 0)), b_.CreateICmpEQ(f, begin), "plane_starts");
      emit_if_else(
          b_, first, "plane",
          [&] {
            llvm::Value* lo = mul_i64(b_, t, s_.reg_h);
            llvm::Value* last_tile = b_.CreateAdd(t, b_.CreateSub(end, f));
            llvm::Value* hi = mul_i64(b_, last_tile, s_.reg_h);
            hi = b_.CreateSelect(b_.CreateICmpSLT(hi, i64(b_, oh_)), hi, i64(b_, oh_));
            llvm::Value* stale =
                b_.CreateICmpNE(b_.CreateLoad(b_.getInt64Ty(), copied), n, "image_stale");
            emit_if_else(
                b_, stale, "copy_image",
                [&] {
                  copy_padded_image(n, image);
                  b_.CreateStore(n, copied);
                },
                [] {});
            emit_amx_plane(n, occ, image, lo, hi);
          },
          [] {});
    });
  }

  // Image n's input chunks into `image`, [icc][padded row][padded column][ic_bn], the padding
  // holding the pad byte.
  void copy_padded_image(llvm::Value* n, llvm::Value* image) {
    const std::pair<int64_t, int64_t> extent = amx_padded_extent(w_);
    const int64_t grid_rows = extent.first;
    const int64_t grid_cols = extent.second;
    auto* pixel_type = llvm::FixedVectorType::get(b_.getInt8Ty(), static_cast<unsigned>(s_.ic_bn));
    if (!pad_pixel_) {
      std::vector<uint8_t> bytes(static_cast<size_t>(s_.ic_bn), static_cast<uint8_t>(pad_));
      pad_pixel_ = new llvm::GlobalVariable(
          m_, llvm::ArrayType::get(b_.getInt8Ty(), static_cast<uint64_t>(s_.ic_bn)), true,
          llvm::GlobalValue::InternalLinkage,
          llvm::ConstantDataArray::get(m_.getContext(), llvm::ArrayRef<uint8_t>(bytes)),
          "pad_pixel");
      pad_pixel_->setAlignment(llvm::Align(64));
    }
    llvm::Value* pad = b_.CreateBitCast(pad_pixel_, b_.getInt8PtrTy());
    emit_for(b_, i64(b_, 0), i64(b_, icc_ * grid_rows), "padded_row", [&](llvm::Value* row) {
      llvm::Value* icc = b_.CreateSDiv(row, i64(b_, grid_rows));
      llvm::Value* ih = add_i64(b_, b_.CreateSRem(row, i64(b_, grid_rows)), -w_.pad_top);
      llvm::Value* row_inside = b_.CreateICmpULT(ih, i64(b_, w_.in_height));
      llvm::Value* plane = mul_i64(b_, add_i64(b_, mul_i64(b_, n, icc_), icc), w_.in_height);
      llvm::Value* src_row = b_.CreateGEP(
          b_.getInt8Ty(), data_, mul_i64(b_, add_i64(b_, plane, ih), w_.in_width * s_.ic_bn));
      llvm::Value* dst_row =
          b_.CreateGEP(b_.getInt8Ty(), image, mul_i64(b_, row, grid_cols * s_.ic_bn));
      emit_for(b_, i64(b_, 0), i64(b_, grid_cols), "padded_col", [&](llvm::Value* col) {
        llvm::Value* iw = add_i64(b_, col, -w_.pad_left);
        llvm::Value* inside = b_.CreateAnd(row_inside, b_.CreateICmpULT(iw, i64(b_, w_.in_width)));
        llvm::Value* src = b_.CreateSelect(
            inside, b_.CreateGEP(b_.getInt8Ty(), src_row, mul_i64(b_, iw, s_.ic_bn)), pad);
        llvm::Value* v = b_.CreateAlignedLoad(
            pixel_type, b_.CreateBitCast(src, pixel_type->getPointerTo()), llvm::Align(1));
        llvm::Value* dst = b_.CreateGEP(b_.getInt8Ty(), dst_row, mul_i64(b_, col, s_.ic_bn));
        b_.CreateAlignedStore(v, b_.CreateBitCast(dst, pixel_type->getPointerTo()), llvm::Align(1));
      });
    });
  }

  // Plane (n, occ) from the padded image, its output rows [lo, hi) stored.
  void emit_amx_plane(llvm::Value* n, llvm::Value* occ, llvm::Value* image, llvm::Value* lo,
                      llvm::Value* hi) {
    const Tile t{n, occ, i64(b_, 0), i64(b_, 0), std::nullopt, oh_, ow_};
    AmxTileContext ctx;
    ctx.workload = &w_;
    ctx.schedule = &s_;
    ctx.data = data_;
    ctx.weight = weight_;
    ctx.pad = pad_;
    ctx.padded_image = image;
    ctx.store = [&](int64_t r, int64_t p, int64_t k, llvm::Value* sum) {
      llvm::Value* inside =
          b_.CreateAnd(b_.CreateICmpSLE(lo, i64(b_, r)), b_.CreateICmpSGT(hi, i64(b_, r)));
      emit_if_else(
          b_, inside, "row_in_slice", [&] { store(t, r, p, k, sum); }, [] {});
    };
    emit_amx_int8_tile(b_, m_, ctx, {t.n, t.occ, t.oh0, t.ow0, t.ow0c, t.rows, t.cols}, icc_,
                       *amx_limits_);
  }

  // Interior tiles on AMX run in groups (amx_run_tiles).
  void emit_amx_runs(llvm::Value* n, llvm::Value* occ, llvm::Value* oh0, int64_t rows,
                     const ColumnClass& c) {
    const int64_t group = amx_run_tiles(s_.reg_n);
    const int64_t count = c.hi - c.lo, full = count / group, rest = count % group;
    if (full > 0)
      emit_for(b_, i64(b_, 0), i64(b_, full), "ow_run", [&](llvm::Value* g) {
        llvm::Value* ow0 = mul_i64(b_, add_i64(b_, mul_i64(b_, g, group), c.lo), s_.reg_n);
        emit_tile({n, occ, oh0, ow0, std::nullopt, rows, group * s_.reg_n});
      });
    if (rest > 0)
      emit_tile({n, occ, oh0, i64(b_, (c.lo + full * group) * s_.reg_n), std::nullopt, rows,
                 rest * s_.reg_n});
  }

  bool col_valid(std::optional<int64_t> ow0c, int64_t p, int64_t kw) const {
    if (!ow0c) return true;
    const int64_t iw = (*ow0c + p) * w_.stride_w + kw * w_.dilation_w - w_.pad_left;
    return iw >= 0 && iw < w_.in_width;
  }

  size_t acc_index(const Tile& t, int64_t r, int64_t p, int64_t block) const {
    return static_cast<size_t>((r * t.cols + p) * blocks_ + block);
  }

  llvm::Type* acc_type() const {
    return llvm::FixedVectorType::get(b_.getInt32Ty(), block_ * reduce_);
  }

  void emit_tile(const Tile& t) {
    if (form_ == DotForm::kAmx) {
      emit_amx_tile(t);
      return;
    }
    LoopState acc(static_cast<size_t>(t.rows * t.cols * blocks_),
                  llvm::Constant::getNullValue(acc_type()));
    acc = emit_for_carried(
        b_, i64(b_, 0), i64(b_, icc_), "ic_chunk", acc, [&](llvm::Value* icc, const LoopState& a0) {
          llvm::Value* plane = mul_i64(b_, add_i64(b_, mul_i64(b_, t.n, icc_), icc), w_.in_height);
          return emit_for_carried(
              b_, i64(b_, 0), i64(b_, w_.kernel_h), "kh", a0,
              [&](llvm::Value* kh, const LoopState& a1) {
                std::vector<llvm::Value*> rows = row_pointers(t, plane, kh);
                auto groups = [&](llvm::Value* kw, std::optional<int64_t> kwc,
                                  const LoopState& a2) {
                  const int64_t split = reduction_split(t);
                  if (split == 1)
                    return emit_for_carried(b_, i64(b_, 0), i64(b_, s_.ic_bn / 4), "ic_group", a2,
                                            [&](llvm::Value* g, const LoopState& a3) {
                                              LoopState a = a3;
                                              emit_products(t, rows, icc, kh, kw, kwc, g, a);
                                              return a;
                                            });
                  return split_groups(t, rows, icc, kh, kw, kwc, split, a2);
                };
                if (t.ow0c || s_.unroll_kw || w_.kernel_w == 1) {
                  LoopState a = a1;
                  for (int64_t kw = 0; kw < w_.kernel_w; ++kw) a = groups(i64(b_, kw), kw, a);
                  return a;
                }
                return emit_for_carried(b_, i64(b_, 0), i64(b_, w_.kernel_w), "kw", a1,
                                        [&](llvm::Value* kw, const LoopState& a2) {
                                          return groups(kw, std::nullopt, a2);
                                        });
              });
        });
    emit_store(t, acc);
  }

  // A tile of fewer than four accumulators (a dense layer of one row: one block, one position)
  // is one dependency chain through the reduction, as long as the dot product's latency times
  // K / 4; split the groups of four input channels over `split` sets of accumulators, summed
  // after the loop, so that the chains overlap. Tiles of four or more already overlap.
  int64_t reduction_split(const Tile& t) const {
    const int64_t accumulators = t.rows * t.cols * blocks_;
    const int64_t groups = s_.ic_bn / 4;
    if (accumulators >= 4) return 1;
    for (int64_t split : {4, 2})
      if (groups % split == 0 && groups >= 2 * split) return split;
    return 1;
  }

  LoopState split_groups(const Tile& t, const std::vector<llvm::Value*>& rows, llvm::Value* icc,
                         llvm::Value* kh, llvm::Value* kw, std::optional<int64_t> kwc,
                         int64_t split, const LoopState& a2) {
    const size_t n = a2.size();
    LoopState sets = a2;  // set 0 carries the sums so far; the others start at zero
    for (int64_t k = 1; k < split; ++k)
      for (size_t i = 0; i < n; ++i) sets.push_back(llvm::Constant::getNullValue(acc_type()));
    sets = emit_for_carried(
        b_, i64(b_, 0), i64(b_, s_.ic_bn / 4 / split), "ic_groups", sets,
        [&](llvm::Value* g, const LoopState& carried) {
          LoopState out = carried;
          for (int64_t k = 0; k < split; ++k) {
            LoopState a(out.begin() + static_cast<std::ptrdiff_t>(k * n),
                        out.begin() + static_cast<std::ptrdiff_t>((k + 1) * n));
            emit_products(t, rows, icc, kh, kw, kwc, add_i64(b_, mul_i64(b_, g, split), k), a);
            std::copy(a.begin(), a.end(), out.begin() + static_cast<std::ptrdiff_t>(k * n));
          }
          return out;
        });
    LoopState sum(sets.begin(), sets.begin() + static_cast<std::ptrdiff_t>(n));
    for (int64_t k = 1; k < split; ++k)
      for (size_t i = 0; i < n; ++i) sum[i] = b_.CreateAdd(sum[i], sets[k * n + i]);
    return sum;
  }

  std::vector<llvm::Value*> row_pointers(const Tile& t, llvm::Value* plane, llvm::Value* kh) {
    std::vector<llvm::Value*> rows;
    llvm::Value* ih0 = add_i64(b_, mul_i64(b_, t.oh0, w_.stride_h),
                               add_i64(b_, mul_i64(b_, kh, w_.dilation_h), -w_.pad_top));
    llvm::Value* zero =
        zero_row_ ? b_.CreateBitCast(zero_row_, b_.getInt8Ty()->getPointerTo()) : nullptr;
    for (int64_t r = 0; r < t.rows; ++r) {
      llvm::Value* ih = add_i64(b_, ih0, r * w_.stride_h);
      llvm::Value* offset = mul_i64(b_, add_i64(b_, plane, ih), w_.in_width * s_.ic_bn);
      llvm::Value* ptr = b_.CreateGEP(b_.getInt8Ty(), data_, offset);
      if (zero) ptr = b_.CreateSelect(b_.CreateICmpULT(ih, i64(b_, w_.in_height)), ptr, zero);
      rows.push_back(ptr);
    }
    return rows;
  }

  // The four data bytes of one position, in the form a block's products take them.
  llvm::Value* data_operand(llvm::Value* ptr) {
    auto* v4 = llvm::FixedVectorType::get(b_.getInt8Ty(), 4);
    if (form_ == DotForm::kVnni || form_ == DotForm::kBytePairs) {  // 4 bytes, every int32 lane
      llvm::Value* word = b_.CreateAlignedLoad(
          b_.getInt32Ty(), b_.CreateBitCast(ptr, b_.getInt32Ty()->getPointerTo()), llvm::Align(1));
      return b_.CreateVectorSplat(block_, word);
    }
    llvm::Value* bytes =
        b_.CreateAlignedLoad(v4, b_.CreateBitCast(ptr, v4->getPointerTo()), llvm::Align(1));
    std::vector<int> repeat;
    if (form_ == DotForm::kPairs) {  // <16 x i16>: d0 d1 d2 d3 four times
      llvm::Value* wide = b_.CreateZExt(bytes, llvm::FixedVectorType::get(b_.getInt16Ty(), 4));
      for (int i = 0; i < 16; ++i) repeat.push_back(i % 4);
      return shuffle(b_, wide, llvm::UndefValue::get(wide->getType()), repeat);
    }
    llvm::Value* wide = b_.CreateZExt(bytes, llvm::FixedVectorType::get(b_.getInt32Ty(), 4));
    for (int i = 0; i < 4 * block_; ++i) repeat.push_back(i % 4);
    return shuffle(b_, wide, llvm::UndefValue::get(wide->getType()), repeat);
  }

  // The padding's four bytes in data_operand's form.
  llvm::Value* pad_operand() {
    if (form_ == DotForm::kVnni || form_ == DotForm::kBytePairs)
      return b_.CreateVectorSplat(block_, b_.getInt32(static_cast<uint32_t>(pad_) * 0x01010101u));
    if (form_ == DotForm::kPairs)
      return b_.CreateVectorSplat(16, b_.getInt16(static_cast<uint16_t>(pad_)));
    return b_.CreateVectorSplat(4 * block_, b_.getInt32(static_cast<uint32_t>(pad_)));
  }

  llvm::Type* out_element() const {
    return byte_out_ ? b_.getInt8Ty() : float_out_ ? b_.getFloatTy() : b_.getInt32Ty();
  }

  // acc plus the products of one block's channels x 4 input channels (acc_type()).
  llvm::Value* accumulate(llvm::Value* acc, llvm::Value* weights, llvm::Value* d) {
    if (form_ == DotForm::kVnni) {
      llvm::Function* dot = llvm::Intrinsic::getDeclaration(
          &m_, block_ == 16 ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                            : llvm::Intrinsic::x86_avx512_vpdpbusd_256);
      return b_.CreateCall(dot, {acc, d, b_.CreateBitCast(weights, acc_type())});
    }
    if (form_ == DotForm::kBytePairs) {  // int16 pair sums, then the pairs' sum per lane
      auto* v32 = llvm::FixedVectorType::get(b_.getInt8Ty(), 32);
      llvm::Function* ubsw =
          llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_avx2_pmadd_ub_sw);
      llvm::Value* pairs = b_.CreateCall(ubsw, {b_.CreateBitCast(d, v32), weights});
      llvm::Function* madd =
          llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_avx2_pmadd_wd);
      llvm::Value* sums = b_.CreateCall(madd, {pairs, b_.CreateVectorSplat(16, b_.getInt16(1))});
      return b_.CreateAdd(acc, sums);
    }
    if (form_ == DotForm::kPairs) {
      llvm::Value* w16 =
          b_.CreateSExt(weights, llvm::FixedVectorType::get(b_.getInt16Ty(), 4 * block_));
      std::vector<int> lo, hi;
      for (int i = 0; i < 16; ++i) {
        lo.push_back(i);
        hi.push_back(16 + i);
      }
      llvm::Value* undef = llvm::UndefValue::get(w16->getType());
      llvm::Function* madd =
          llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_avx2_pmadd_wd);
      llvm::Value* plo = b_.CreateCall(madd, {shuffle(b_, w16, undef, lo), d});
      llvm::Value* phi = b_.CreateCall(madd, {shuffle(b_, w16, undef, hi), d});
      std::vector<int> concat;
      for (int i = 0; i < 16; ++i) concat.push_back(i);
      return b_.CreateAdd(acc, shuffle(b_, plo, phi, concat));
    }
    return b_.CreateAdd(acc, b_.CreateMul(b_.CreateSExt(weights, acc_type()), d));
  }

  void emit_products(const Tile& t, const std::vector<llvm::Value*>& rows, llvm::Value* icc,
                     llvm::Value* kh, llvm::Value* kw, std::optional<int64_t> kwc, llvm::Value* g,
                     LoopState& acc) {
    if (kwc) {
      bool any = false;
      for (int64_t p = 0; p < t.cols; ++p) any |= col_valid(t.ow0c, p, *kwc);
      if (!any && pad_ == 0) return;
    }
    // weight[occ][icc][kh][kw][g][oc_bn][4]: a block's channels x 4 are adjacent bytes.
    llvm::Value* woff =
        add_i64(b_, mul_i64(b_, add_i64(b_, mul_i64(b_, t.occ, icc_), icc), w_.kernel_h), kh);
    woff = mul_i64(
        b_,
        add_i64(b_, mul_i64(b_, add_i64(b_, mul_i64(b_, woff, w_.kernel_w), kw), s_.ic_bn / 4), g),
        s_.oc_bn * 4);
    auto* vw = llvm::FixedVectorType::get(b_.getInt8Ty(), 4 * block_);
    std::vector<llvm::Value*> weights;
    for (int64_t k = 0; k < blocks_; ++k) {
      llvm::Value* ptr = b_.CreateGEP(b_.getInt8Ty(), weight_, add_i64(b_, woff, k * 4 * block_));
      weights.push_back(
          b_.CreateAlignedLoad(vw, b_.CreateBitCast(ptr, vw->getPointerTo()), llvm::Align(1)));
    }
    // Within a row: (iw, c) at iw * ic_bn + c, iw = ow0 * SW + kw * DW - PL + p * SW.
    llvm::Value* col0 = add_i64(b_, mul_i64(b_, t.ow0, w_.stride_w),
                                add_i64(b_, mul_i64(b_, kw, w_.dilation_w), -w_.pad_left));
    llvm::Value* base = add_i64(b_, mul_i64(b_, col0, s_.ic_bn), mul_i64(b_, g, 4));
    for (int64_t r = 0; r < t.rows; ++r) {
      llvm::Value* row = b_.CreateGEP(b_.getInt8Ty(), rows[r], base);
      for (int64_t p = 0; p < t.cols; ++p) {
        const bool padding = kwc && !col_valid(t.ow0c, p, *kwc);
        if (padding && pad_ == 0) continue;
        llvm::Value* d = padding ? pad_operand()
                                 : data_operand(b_.CreateGEP(b_.getInt8Ty(), row,
                                                             i64(b_, p * w_.stride_w * s_.ic_bn)));
        for (int64_t k = 0; k < blocks_; ++k) {
          llvm::Value*& a = acc[acc_index(t, r, p, k)];
          a = accumulate(a, weights[k], d);
        }
      }
    }
  }

  // Lane o of the result: the sum of the unreduced lanes o * R .. o * R + R - 1.
  llvm::Value* reduce(llvm::Value* acc) {
    if (reduce_ == 1) return acc;
    llvm::Value* undef = llvm::UndefValue::get(acc->getType());
    llvm::Value* sum = nullptr;
    for (int k = 0; k < reduce_; ++k) {
      std::vector<int> pick;
      for (int o = 0; o < block_; ++o) pick.push_back(o * reduce_ + k);
      llvm::Value* part = shuffle(b_, acc, undef, pick);
      sum = sum ? b_.CreateAdd(sum, part) : part;
    }
    return sum;
  }

  void emit_store(const Tile& t, const LoopState& acc) {
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t p = 0; p < t.cols; ++p)
        for (int64_t k = 0; k < blocks_; ++k) store(t, r, p, k, reduce(acc[acc_index(t, r, p, k)]));
  }

  // Output (row r, column p, channel block k) of the tile: `value`, block_ int32 sums, through
  // the epilogue.
  void store(const Tile& t, int64_t r, int64_t p, int64_t k, llvm::Value* value) {
    llvm::Value* plane = mul_i64(b_, add_i64(b_, mul_i64(b_, t.n, occ_), t.occ), oh_);
    auto* vb = llvm::FixedVectorType::get(out_element(), block_);
    llvm::Value* channel0 = mul_i64(b_, t.occ, s_.oc_bn);
    llvm::Value* base;
    if (channels_last_out_) {  // NHWC-style output: all OC channels of a position adjacent
      llvm::Value* row =
          mul_i64(b_, add_i64(b_, mul_i64(b_, t.n, oh_), add_i64(b_, t.oh0, r)), ow_);
      base = add_i64(b_, mul_i64(b_, add_i64(b_, row, add_i64(b_, t.ow0, p)), w_.out_channels),
                     channel0);
    } else {
      llvm::Value* row = mul_i64(b_, add_i64(b_, plane, add_i64(b_, t.oh0, r)), ow_);
      base = mul_i64(b_, add_i64(b_, row, add_i64(b_, t.ow0, p)), s_.oc_bn);
    }
    llvm::Value* offset = add_i64(b_, base, k * block_);
    llvm::Value* ptr = b_.CreateGEP(out_element(), out_, offset);
    if (!args_.epilogue.empty())
      value = apply_epilogue(b_, value, args_, add_i64(b_, channel0, k * block_), offset, block_);
    b_.CreateAlignedStore(value, b_.CreateBitCast(ptr, vb->getPointerTo()),
                          llvm::Align(byte_out_ ? 1 : 4));
  }

  void emit_amx_tile(const Tile& t) {
    AmxTileContext ctx;
    ctx.workload = &w_;
    ctx.schedule = &s_;
    ctx.data = data_;
    ctx.weight = weight_;
    ctx.pad = pad_;
    ctx.row_pointers = [&](llvm::Value* plane, llvm::Value* kh) {
      return row_pointers(t, plane, kh);
    };
    ctx.store = [&](int64_t r, int64_t p, int64_t k, llvm::Value* sum) { store(t, r, p, k, sum); };
    emit_amx_int8_tile(b_, m_, ctx, {t.n, t.occ, t.oh0, t.ow0, t.ow0c, t.rows, t.cols}, icc_,
                       *amx_limits_);
  }

  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
  const AnchorArgs& args_;
  const Conv2dWorkload& w_;
  const Conv2dInt8Schedule& s_;
  llvm::Value *data_, *weight_, *out_;
  llvm::GlobalVariable* zero_row_ = nullptr;
  llvm::GlobalVariable* pad_pixel_ = nullptr;  // ic_bn pad bytes (the padded form's copy)
  bool channels_last_out_;
  int64_t pad_ = 0;         // the byte padding reads
  bool float_out_ = false;  // the epilogue converts to float: the output is float32
  bool byte_out_ = false;   // ... and then to bytes: the output is uint8 or int8
  DotForm form_ = DotForm::kWidened;
  std::optional<AmxPassLimits> amx_limits_;  // set where the kernel runs on AMX tiles
  bool padded_ = false;                      // ... in the padded form
  int block_ = 8;                            // output channels per accumulator
  int reduce_ = 4;                           // unreduced partial sums per channel
  int64_t icc_, occ_, oh_, ow_, blocks_;
  std::vector<ColumnClass> columns_;
};

}  // namespace

void emit_conv2d_nchwc_int8_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                                 const schedule_space::Task& task,
                                 const schedule_space::ConfigSpace& space,
                                 const schedule_space::Config& config) {
  const auto& w = std::get<Conv2dWorkload>(task.workload);
  const Conv2dInt8Schedule s = schedule_space::conv2d_nchwc_int8_schedule(space, config);
  Int8ConvEmitter emitter(b, m, args, w, s, /*channels_last_out=*/false);
  emitter.emit(args.begin, args.end);
}

// dense_int8 is this kernel on a 1 x M plane of K channels in one block: (M, K) data is
// NCHW[K]c, the NC16n4c (NC8n4c) weight is OIHW[K/4]i16o4i (i8o4i), and (M, N) is the
// position-major output.
void emit_dense_int8_task(llvm::Module& m, llvm::IRBuilder<>& b, const AnchorArgs& args,
                          const schedule_space::Task& task,
                          const schedule_space::ConfigSpace& space,
                          const schedule_space::Config& config) {
  const auto& d = std::get<schedule_space::DenseWorkload>(task.workload);
  Conv2dWorkload w;
  w.in_channels = d.in_features;
  w.in_height = 1;
  w.in_width = d.batch;
  w.out_channels = d.out_features;
  w.kernel_h = w.kernel_w = 1;
  w.precision = d.precision;
  const schedule_space::DenseInt8Schedule ds =
      schedule_space::dense_int8_schedule(space, config, d);
  const Conv2dInt8Schedule s{d.in_features, ds.oc_bn, ds.rows, 1, false};
  Int8ConvEmitter emitter(b, m, args, w, s, /*channels_last_out=*/true);
  emitter.emit(args.begin, args.end);
}

}  // namespace tensortune::codegen::emit
