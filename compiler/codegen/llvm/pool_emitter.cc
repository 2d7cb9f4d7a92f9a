// Max and average pooling in NCHW[b]c: the block is the vector (taps outside the input read a
// clamped address and are replaced by -inf, or 0 for the sum, with a select). The max is the
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
    emit_for(b, i64(b, 0), i64(b, p.out_w), "ow", [&](llvm::Value* ow) {
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
        llvm::Value* row_ok = b.CreateICmpULT(ih, i64(b, H));
        llvm::Value* row = mul_i64(b, add_i64(b, mul_i64(b, plane, H), clamp_index(b, ih, H)), W);
        for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
          llvm::Value* iw = add_i64(b, mul_i64(b, ow, p.stride_w), kw * p.dilation_w - p.pad_left);
          llvm::Value* ok = b.CreateAnd(row_ok, b.CreateICmpULT(iw, i64(b, W)));
          llvm::Value* base = mul_i64(b, add_i64(b, row, clamp_index(b, iw, W)), blk);
          if (p.average) {
            // Counted taps: inside the input, or with count_include_pad inside the padded input
            // (top and left pads always; the bottom and right ones bound ceil mode's extra taps).
            llvm::Value* counted = p.count_include_pad
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
    });
  });
  b.CreateRetVoid();
}

}  // namespace tensortune::codegen::emit
