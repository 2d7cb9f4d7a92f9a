// Max and average pooling in NCHW[b]c: the block is the vector (taps outside the input read a
// clamped address and are replaced by -inf, or 0 for the sum, with a select; windows wholly
// inside the input skip those checks). The max is the
// interpreter's std::max(best, x) = best < x ? x : best, so NaN behaviour matches it too; the
// average sums in double in the interpreter's tap order.
#include <llvm/IR/Module.h>

#include <limits>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"

namespace tensortune::codegen::emit {

void emit_max_pool(llvm::Module& m, const std::string& name, const MaxPoolKernelSpec& p,
                   int lanes) {
  llvm::IRBuilder<> b(m.getContext());
  llvm::Function* f = create_network_function(m, b, name, lanes * 32);
  llvm::Value* out = network_arg(b, f, 0);
  llvm::Value* in = network_arg(b, f, 1);
  const int64_t H = p.in_shape[2], W = p.in_shape[3], blk = p.in_shape[4];
  const std::vector<int> widths = lane_widths(blk, lanes);
  emit_for(b, f->getArg(1), f->getArg(2), "row", [&](llvm::Value* r) {
    llvm::Value* oh = b.CreateSRem(r, i64(b, p.out_h), "oh");
    llvm::Value* plane = b.CreateSDiv(r, i64(b, p.out_h), "plane");  // n * (C / b) + chunk
    // One output column; `checked`: its taps may fall outside the input (else no clamps, no
    // selects: LLVM makes a select of a load a branch per vector).
    auto column = [&](llvm::Value* ow, bool checked) {
      std::vector<llvm::Value*> best;
      auto vector_of = [&](llvm::Type* e, int wd) {
        return wd == 1 ? e : static_cast<llvm::Type*>(llvm::FixedVectorType::get(e, wd));
      };
      for (int wd : widths) {
        if (p.average)  // the running sum, in double
          best.push_back(llvm::ConstantFP::get(vector_of(b.getDoubleTy(), wd), 0.0));
        else
          best.push_back(llvm::ConstantFP::getInfinity(vector_of(b.getFloatTy(), wd), true));
      }
      llvm::Value* count = i64(b, 0);
      for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
        llvm::Value* ih = add_i64(b, mul_i64(b, oh, p.stride_h), kh * p.dilation_h - p.pad_top);
        llvm::Value* row_ok = checked ? b.CreateICmpULT(ih, i64(b, H)) : b.getTrue();
        llvm::Value* row =
            mul_i64(b, add_i64(b, mul_i64(b, plane, H), checked ? clamp_index(b, ih, H) : ih), W);
        for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
          llvm::Value* iw = add_i64(b, mul_i64(b, ow, p.stride_w), kw * p.dilation_w - p.pad_left);
          llvm::Value* ok =
              checked ? b.CreateAnd(row_ok, b.CreateICmpULT(iw, i64(b, W))) : b.getTrue();
          llvm::Value* base =
              mul_i64(b, add_i64(b, row, checked ? clamp_index(b, iw, W) : iw), blk);
          if (p.average) {
            // Counted taps: inside the input, or with count_include_pad inside the padded input
            // (top and left pads always; the bottom and right ones bound ceil mode's extra taps).
            llvm::Value* counted = p.count_include_pad && checked
                                       ? b.CreateAnd(b.CreateICmpSLT(ih, i64(b, H + p.pad_bottom)),
                                                     b.CreateICmpSLT(iw, i64(b, W + p.pad_right)))
                                       : ok;
            count = b.CreateAdd(count, b.CreateZExt(counted, b.getInt64Ty()));
          }
          for (size_t v = 0; v < widths.size(); ++v) {
            llvm::Value* offset = add_i64(b, base, static_cast<int64_t>(v) * lanes);
            llvm::Value* x =
                widths[v] == 1 ? load_scalar(b, in, offset) : load_vector(b, in, offset, widths[v]);
            if (p.average) {
              llvm::Value* xd = b.CreateFPExt(x, best[v]->getType());
              best[v] = b.CreateFAdd(
                  best[v], b.CreateSelect(ok, xd, llvm::ConstantFP::get(xd->getType(), 0.0)));
              continue;
            }
            x = b.CreateSelect(ok, x, llvm::ConstantFP::getInfinity(x->getType(), true));
            best[v] = b.CreateSelect(b.CreateFCmpOLT(best[v], x), x, best[v]);
          }
        }
      }
      if (p.average) {
        llvm::Value* n = b.CreateSIToFP(
            b.CreateSelect(b.CreateICmpSGT(count, i64(b, 1)), count, i64(b, 1)), b.getDoubleTy());
        for (size_t v = 0; v < widths.size(); ++v) {
          llvm::Value* divisor =
              widths[v] == 1 ? n : b.CreateVectorSplat(static_cast<unsigned>(widths[v]), n);
          best[v] =
              b.CreateFPTrunc(b.CreateFDiv(best[v], divisor), vector_of(b.getFloatTy(), widths[v]));
        }
      }
      llvm::Value* out_base = mul_i64(b, add_i64(b, mul_i64(b, r, p.out_w), ow), blk);
      for (size_t v = 0; v < widths.size(); ++v) {
        llvm::Value* offset = add_i64(b, out_base, static_cast<int64_t>(v) * lanes);
        if (widths[v] == 1) {
          b.CreateAlignedStore(best[v], b.CreateInBoundsGEP(b.getFloatTy(), out, offset),
                               llvm::Align(4));
        } else {
          store_vector(b, best[v], out, offset, widths[v]);
        }
      }
    };
    // Columns whose taps all read the input, and rows likewise (tested per row).
    auto inside = [&](int64_t ow) {
      const int64_t first = ow * p.stride_w - p.pad_left;
      return first >= 0 && first + (p.kernel_w - 1) * p.dilation_w < W;
    };
    int64_t lo = 0;
    while (lo < p.out_w && !inside(lo)) ++lo;
    int64_t hi = lo;
    while (hi < p.out_w && inside(hi)) ++hi;
    auto columns = [&](int64_t from, int64_t to, bool checked) {
      if (from < to)
        emit_for(b, i64(b, from), i64(b, to), "ow", [&](llvm::Value* ow) { column(ow, checked); });
    };
    columns(0, lo, true);
    if (lo < hi) {
      llvm::Value* top = add_i64(b, mul_i64(b, oh, p.stride_h), -p.pad_top);
      llvm::Value* bottom = add_i64(b, top, (p.kernel_h - 1) * p.dilation_h);
      llvm::Value* rows_inside =
          b.CreateAnd(b.CreateICmpSGE(top, i64(b, 0)), b.CreateICmpSLT(bottom, i64(b, H)));
      emit_if_else(
          b, rows_inside, "rows_inside", [&] { columns(lo, hi, false); },
          [&] { columns(lo, hi, true); });
    }
    columns(hi, p.out_w, true);
  });
  b.CreateRetVoid();
}

}  // namespace tensortune::codegen::emit
