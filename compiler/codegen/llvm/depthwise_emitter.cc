// Depthwise convolution in NCHW[b]c (NCHW when b = 1): each output channel block reads only its
// own input block, so the block is the vector and there is no reduction over channels. One
// parallel iteration is one output row of one channel block; a row is cut into tiles of reg_n
// columns whose accumulators stay in registers across the kh x kw taps. Taps outside the input
// read a clamped address and are zeroed with a select, so every tile has the same code.
#include <llvm/IR/Module.h>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"

namespace tensortune::codegen::emit {

void emit_depthwise_nchwc(llvm::IRBuilder<>& b, const AnchorArgs& args,
                          const schedule_space::Conv2dWorkload& w,
                          const schedule_space::Conv2dSchedule& s, int lanes) {
  const int64_t blk = s.oc_bn, chunks = w.out_channels / blk;
  const int64_t OH = w.out_height(), OW = w.out_width(), H = w.in_height, W = w.in_width;
  const std::vector<int> widths = lane_widths(blk, lanes);
  auto in_range = [&](llvm::Value* v, int64_t hi) { return b.CreateICmpULT(v, i64(b, hi)); };
  emit_for(b, args.begin, args.end, "row", [&](llvm::Value* f) {
    llvm::Value* oh = b.CreateSRem(f, i64(b, OH), "oh");
    llvm::Value* rest = b.CreateSDiv(f, i64(b, OH));
    llvm::Value* cc = b.CreateSRem(rest, i64(b, chunks), "chunk");
    llvm::Value* n = b.CreateSDiv(rest, i64(b, chunks), "n");
    llvm::Value* plane =
        mul_i64(b, add_i64(b, mul_i64(b, n, chunks), cc), H);  // rows before this block
    llvm::Value* out_row =
        mul_i64(b, add_i64(b, mul_i64(b, add_i64(b, mul_i64(b, n, chunks), cc), OH), oh), OW);
    emit_for(b, i64(b, 0), i64(b, OW / s.reg_n), "ow_tile", [&](llvm::Value* tile) {
      llvm::Value* ow0 = mul_i64(b, tile, s.reg_n);
      std::vector<llvm::Value*> acc;
      for (int64_t p = 0; p < s.reg_n; ++p)
        for (int wd : widths)
          acc.push_back(
              llvm::Constant::getNullValue(llvm::FixedVectorType::get(b.getFloatTy(), wd)));
      for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
        llvm::Value* ih = add_i64(b, mul_i64(b, oh, w.stride_h), kh * w.dilation_h - w.pad_top);
        llvm::Value* row_ok = in_range(ih, H);
        llvm::Value* row = mul_i64(b, add_i64(b, plane, clamp_index(b, ih, H)), W);
        for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
          std::vector<llvm::Value*> wv;
          for (size_t v = 0; v < widths.size(); ++v)
            wv.push_back(
                load_vector(b, args.weight,
                            add_i64(b, mul_i64(b, cc, w.kernel_h * w.kernel_w * blk),
                                    (kh * w.kernel_w + kw) * blk + static_cast<int64_t>(v) * lanes),
                            widths[v]));
          for (int64_t p = 0; p < s.reg_n; ++p) {
            llvm::Value* iw = add_i64(b, mul_i64(b, add_i64(b, ow0, p), w.stride_w),
                                      kw * w.dilation_w - w.pad_left);
            llvm::Value* ok = b.CreateAnd(row_ok, in_range(iw, W));
            llvm::Value* base = mul_i64(b, add_i64(b, row, clamp_index(b, iw, W)), blk);
            for (size_t v = 0; v < widths.size(); ++v) {
              llvm::Value* x = load_vector(
                  b, args.data, add_i64(b, base, static_cast<int64_t>(v) * lanes), widths[v]);
              x = b.CreateSelect(ok, x, llvm::Constant::getNullValue(x->getType()));
              llvm::Value*& a = acc[static_cast<size_t>(p) * widths.size() + v];
              a = fma(b, x, wv[v], a);
            }
          }
        }
      }
      for (int64_t p = 0; p < s.reg_n; ++p)
        for (size_t v = 0; v < widths.size(); ++v) {
          llvm::Value* offset = add_i64(b, mul_i64(b, add_i64(b, out_row, add_i64(b, ow0, p)), blk),
                                        static_cast<int64_t>(v) * lanes);
          llvm::Value* channel = add_i64(b, mul_i64(b, cc, blk), static_cast<int64_t>(v) * lanes);
          llvm::Value* val = apply_epilogue(b, acc[static_cast<size_t>(p) * widths.size() + v],
                                            args, channel, offset, widths[v]);
          store_vector(b, val, args.out, offset, widths[v]);
        }
    });
  });
}

}  // namespace tensortune::codegen::emit
