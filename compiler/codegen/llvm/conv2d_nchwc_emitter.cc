#include <optional>
#include <vector>

#include <llvm/IR/Module.h>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"

namespace tensortune::compiler::codegen {
namespace {

using schedule_space::Conv2dSchedule;
using schedule_space::Conv2dWorkload;

/// A class of output tiles along one spatial axis: either a runtime range of interior tiles
/// (no bounds checks needed) or one border/tail tile at a compile-time position.
struct TileClass {
  bool runtime = false;
  int64_t lo = 0, hi = 0;  ///< runtime: tile indices [lo, hi)
  int64_t tile = 0;        ///< constant: the tile index
  int64_t size = 0;        ///< positions in the tile
};

std::vector<TileClass> classify_tiles(int64_t out, int64_t tile, int64_t stride, int64_t kernel,
                                      int64_t dilation, int64_t pad_begin, int64_t in) {
  std::vector<TileClass> classes;
  const int64_t count = (out + tile - 1) / tile;
  for (int64_t t = 0; t < count; ++t) {
    const int64_t size = std::min(tile, out - t * tile);
    const int64_t first = t * tile * stride - pad_begin;
    const int64_t last = (t * tile + size - 1) * stride + (kernel - 1) * dilation - pad_begin;
    const bool interior = size == tile && first >= 0 && last <= in - 1;
    if (interior && !classes.empty() && classes.back().runtime && classes.back().hi == t) {
      classes.back().hi = t + 1;
    } else if (interior) {
      classes.push_back({true, t, t + 1, 0, size});
    } else {
      classes.push_back({false, 0, 0, t, size});
    }
  }
  return classes;
}

class ConvEmitter {
 public:
  ConvEmitter(llvm::IRBuilder<>& b, llvm::Function* f, const Conv2dWorkload& w,
              const Conv2dSchedule& s, int lanes, const KernelOptions& o)
      : b_(b), w_(w), s_(s), lanes_(lanes), opt_(o) {
    data_ = f->getArg(0);
    weight_ = f->getArg(1);
    bias_ = f->getArg(2);
    out_ = f->getArg(3);
    icc_ = w.in_channels / s.ic_bn;
    occ_ = w.out_channels / s.oc_bn;
    oh_ = w.out_height();
    ow_ = w.out_width();
    for (int64_t c = 0; c < s.oc_bn; c += lanes) widths_.push_back(static_cast<int>(std::min<int64_t>(lanes, s.oc_bn - c)));
    row_classes_ = classify_tiles(oh_, s.reg_h, w.stride_h, w.kernel_h, w.dilation_h, w.pad_top, w.in_height);
    col_classes_ = classify_tiles(ow_, s.reg_n, w.stride_w, w.kernel_w, w.dilation_w, w.pad_left, w.in_width);
  }

  int64_t row_tiles() const { return (oh_ + s_.reg_h - 1) / s_.reg_h; }

  void emit(llvm::Value* begin, llvm::Value* end) {
    const int64_t oht = row_tiles();
    emit_for(b_, begin, end, "fused", [&](llvm::Value* f) {
      llvm::Value* t = b_.CreateSRem(f, i64(b_, oht), "oh_tile");
      llvm::Value* rest = b_.CreateSDiv(f, i64(b_, oht));
      llvm::Value* occ = b_.CreateSRem(rest, i64(b_, occ_), "oc_chunk");
      llvm::Value* n = b_.CreateSDiv(rest, i64(b_, occ_), "n");
      emit_row_dispatch(n, occ, t);
    });
  }

 private:
  void emit_row_dispatch(llvm::Value* n, llvm::Value* occ, llvm::Value* t) {
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    llvm::LLVMContext& ctx = b_.getContext();
    auto* done = llvm::BasicBlock::Create(ctx, "rows.done", f);
    auto* interior = llvm::BasicBlock::Create(ctx, "rows.interior", f);
    std::vector<const TileClass*> constants;
    bool has_runtime = false;
    for (const auto& c : row_classes_) {
      if (c.runtime) has_runtime = true;
      else constants.push_back(&c);
    }
    llvm::SwitchInst* sw = b_.CreateSwitch(t, has_runtime ? interior : done, constants.size());
    for (const TileClass* c : constants) {
      auto* bb = llvm::BasicBlock::Create(ctx, "rows.border" + std::to_string(c->tile), f);
      sw->addCase(b_.getInt64(c->tile), bb);
      b_.SetInsertPoint(bb);
      emit_row(n, occ, i64(b_, c->tile * s_.reg_h), c->tile * s_.reg_h, c->size);
      b_.CreateBr(done);
    }
    b_.SetInsertPoint(interior);
    if (has_runtime) {
      llvm::Value* oh0 = b_.CreateMul(t, i64(b_, s_.reg_h), "oh0", false, true);
      emit_row(n, occ, oh0, std::nullopt, s_.reg_h);
    }
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  void emit_row(llvm::Value* n, llvm::Value* occ, llvm::Value* oh0, std::optional<int64_t> oh0c,
                int64_t rows) {
    for (const auto& c : col_classes_) {
      if (c.runtime) {
        emit_for(b_, i64(b_, c.lo), i64(b_, c.hi), "ow_tile", [&](llvm::Value* ct) {
          llvm::Value* ow0 = b_.CreateMul(ct, i64(b_, s_.reg_n), "ow0", false, true);
          emit_tile(n, occ, oh0, oh0c, rows, ow0, std::nullopt, c.size);
        });
      } else {
        const int64_t ow0 = c.tile * s_.reg_n;
        emit_tile(n, occ, oh0, oh0c, rows, i64(b_, ow0), ow0, c.size);
      }
    }
  }

  bool row_valid(std::optional<int64_t> oh0c, int64_t r, int64_t kh) const {
    if (!oh0c) return true;
    const int64_t ih = (*oh0c + r) * w_.stride_h + kh * w_.dilation_h - w_.pad_top;
    return ih >= 0 && ih < w_.in_height;
  }
  bool col_valid(std::optional<int64_t> ow0c, int64_t p, int64_t kw) const {
    if (!ow0c) return true;
    const int64_t iw = (*ow0c + p) * w_.stride_w + kw * w_.dilation_w - w_.pad_left;
    return iw >= 0 && iw < w_.in_width;
  }

  struct Tile {
    llvm::Value *n, *occ, *oh0, *ow0;
    std::optional<int64_t> oh0c, ow0c;
    int64_t rows, cols;
    std::vector<llvm::AllocaInst*> acc;  // [r][p][v]
    llvm::AllocaInst* at(int64_t r, int64_t p, size_t v, size_t nv) const {
      return acc[(r * cols + p) * nv + v];
    }
  };

  void emit_tile(llvm::Value* n, llvm::Value* occ, llvm::Value* oh0, std::optional<int64_t> oh0c,
                 int64_t rows, llvm::Value* ow0, std::optional<int64_t> ow0c, int64_t cols) {
    Tile t{n, occ, oh0, ow0, oh0c, ow0c, rows, cols, {}};
    const size_t nv = widths_.size();
    for (int64_t i = 0; i < rows * cols; ++i)
      for (size_t v = 0; v < nv; ++v) {
        auto* vt = llvm::FixedVectorType::get(b_.getFloatTy(), widths_[v]);
        auto* a = entry_alloca(b_, vt, "acc");
        b_.CreateStore(llvm::Constant::getNullValue(vt), a);
        t.acc.push_back(a);
      }
    emit_for(b_, i64(b_, 0), i64(b_, icc_), "ic_chunk", [&](llvm::Value* icc) {
      auto kw_and_icb = [&](llvm::Value* kh, std::optional<int64_t> khc) {
        if (ow0c || s_.unroll_kw || w_.kernel_w == 1) {
          emit_for(b_, i64(b_, 0), i64(b_, s_.ic_bn), "ic_block", [&](llvm::Value* icb) {
            for (int64_t kw = 0; kw < w_.kernel_w; ++kw) emit_fmas(t, icc, kh, khc, i64(b_, kw), kw, icb);
          });
        } else {
          emit_for(b_, i64(b_, 0), i64(b_, w_.kernel_w), "kw", [&](llvm::Value* kw) {
            emit_for(b_, i64(b_, 0), i64(b_, s_.ic_bn), "ic_block", [&](llvm::Value* icb) {
              emit_fmas(t, icc, kh, khc, kw, std::nullopt, icb);
            });
          });
        }
      };
      if (oh0c || w_.kernel_h == 1) {
        for (int64_t kh = 0; kh < w_.kernel_h; ++kh) {
          bool any = false;
          for (int64_t r = 0; r < rows; ++r) any |= row_valid(oh0c, r, kh);
          if (any) kw_and_icb(i64(b_, kh), kh);
        }
      } else {
        emit_for(b_, i64(b_, 0), i64(b_, w_.kernel_h), "kh", [&](llvm::Value* kh) {
          kw_and_icb(kh, std::nullopt);
        });
      }
    });
    emit_store(t);
  }

  void emit_fmas(const Tile& t, llvm::Value* icc, llvm::Value* kh, std::optional<int64_t> khc,
                 llvm::Value* kw, std::optional<int64_t> kwc, llvm::Value* icb) {
    const size_t nv = widths_.size();
    // Skip the whole tap when no position of the tile reads inside the input.
    if (khc && kwc) {
      bool any = false;
      for (int64_t r = 0; r < t.rows; ++r)
        for (int64_t p = 0; p < t.cols; ++p) any |= row_valid(t.oh0c, r, *khc) && col_valid(t.ow0c, p, *kwc);
      if (!any) return;
    }
    auto mul = [&](llvm::Value* a, int64_t c) { return b_.CreateMul(a, i64(b_, c), "", false, true); };
    auto add = [&](llvm::Value* a, llvm::Value* c) { return b_.CreateAdd(a, c, "", false, true); };
    // weight[occ][icc][kh][kw][icb][oc]
    llvm::Value* woff = add(mul(add(mul(t.occ, icc_), icc), w_.kernel_h), kh);
    woff = mul(add(mul(add(mul(woff, w_.kernel_w), kw), s_.ic_bn), icb), s_.oc_bn);
    std::vector<llvm::Value*> wv;
    for (size_t v = 0; v < nv; ++v)
      wv.push_back(load_vector(b_, weight_, add(woff, i64(b_, v * lanes_)), widths_[v]));
    // data[n][icc][ih][iw][icb], ih = (oh0 + r) * SH + kh * DH - PT
    llvm::Value* plane = mul(add(mul(t.n, icc_), icc), w_.in_height);
    llvm::Value* ih0 = add(mul(t.oh0, w_.stride_h), b_.CreateSub(mul(kh, w_.dilation_h), i64(b_, w_.pad_top)));
    llvm::Value* iw0 = add(mul(t.ow0, w_.stride_w), b_.CreateSub(mul(kw, w_.dilation_w), i64(b_, w_.pad_left)));
    for (int64_t r = 0; r < t.rows; ++r) {
      if (khc && !row_valid(t.oh0c, r, *khc)) continue;
      llvm::Value* row = mul(add(plane, add(ih0, i64(b_, r * w_.stride_h))), w_.in_width);
      for (int64_t p = 0; p < t.cols; ++p) {
        if (kwc && !col_valid(t.ow0c, p, *kwc)) continue;
        llvm::Value* off = add(mul(add(row, add(iw0, i64(b_, p * w_.stride_w))), s_.ic_bn), icb);
        llvm::Value* x = load_scalar(b_, data_, off);
        llvm::Value* splat_full = nullptr;
        for (size_t v = 0; v < nv; ++v) {
          llvm::Value* xs;
          if (widths_[v] == lanes_) {
            if (!splat_full) splat_full = b_.CreateVectorSplat(lanes_, x);
            xs = splat_full;
          } else {
            xs = b_.CreateVectorSplat(widths_[v], x);
          }
          llvm::AllocaInst* a = t.at(r, p, v, nv);
          llvm::Value* cur = b_.CreateLoad(a->getAllocatedType(), a);
          b_.CreateStore(fma(b_, xs, wv[v], cur), a);
        }
      }
    }
  }

  void emit_store(const Tile& t) {
    const size_t nv = widths_.size();
    auto mul = [&](llvm::Value* a, int64_t c) { return b_.CreateMul(a, i64(b_, c), "", false, true); };
    auto add = [&](llvm::Value* a, llvm::Value* c) { return b_.CreateAdd(a, c, "", false, true); };
    std::vector<llvm::Value*> bias;
    if (opt_.bias)
      for (size_t v = 0; v < nv; ++v)
        bias.push_back(load_vector(b_, bias_, add(mul(t.occ, s_.oc_bn), i64(b_, v * lanes_)), widths_[v]));
    llvm::Value* plane = mul(add(mul(t.n, occ_), t.occ), oh_);
    for (int64_t r = 0; r < t.rows; ++r) {
      llvm::Value* row = mul(add(plane, add(t.oh0, i64(b_, r))), ow_);
      for (int64_t p = 0; p < t.cols; ++p) {
        llvm::Value* base = mul(add(row, add(t.ow0, i64(b_, p))), s_.oc_bn);
        for (size_t v = 0; v < nv; ++v) {
          llvm::AllocaInst* a = t.at(r, p, v, nv);
          llvm::Value* val = b_.CreateLoad(a->getAllocatedType(), a);
          if (opt_.bias) val = b_.CreateFAdd(val, bias[v]);
          if (opt_.relu)
            val = b_.CreateIntrinsic(llvm::Intrinsic::maxnum, {val->getType()},
                                     {val, llvm::Constant::getNullValue(val->getType())});
          store_vector(b_, val, out_, add(base, i64(b_, v * lanes_)), widths_[v]);
        }
      }
    }
  }

  llvm::IRBuilder<>& b_;
  const Conv2dWorkload& w_;
  const Conv2dSchedule& s_;
  int lanes_;
  KernelOptions opt_;
  llvm::Value *data_, *weight_, *bias_, *out_;
  int64_t icc_, occ_, oh_, ow_;
  std::vector<int> widths_;
  std::vector<TileClass> row_classes_, col_classes_;
};

}  // namespace

void emit_conv2d_nchwc(llvm::Module& m, const std::string& name, const Conv2dWorkload& w,
                       const Conv2dSchedule& s, int lanes, const KernelOptions& options) {
  llvm::Function* f = create_kernel_function(m, name, lanes * 32);
  llvm::IRBuilder<> b(m.getContext());
  auto* entry = llvm::BasicBlock::Create(m.getContext(), "entry", f);
  b.SetInsertPoint(entry);
  ConvEmitter emitter(b, f, w, s, lanes, options);
  emitter.emit(f->getArg(4), f->getArg(5));
  b.CreateRetVoid();
}

}  // namespace tensortune::compiler::codegen
