// Layer normalisation over rows: the mean, then the mean squared deviation, then each element
// normalised, scaled and shifted. The arithmetic is the interpreter's, in double (each float
// widened as it is loaded), so that the kernel differs from it only in the order of the two sums:
// within one rounding of the float result. A row of a transformer (768-4096 floats) stays in L1
// across the three passes; the work is a few vector instructions per element, far below the
// memory traffic of the layers around it.
#include <llvm/IR/Module.h>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/ir_helpers.h"

namespace tensortune::codegen::emit {

void emit_layer_norm(llvm::Module& m, const std::string& name, const LayerNormKernelSpec& spec,
                     int lanes) {
  llvm::IRBuilder<> b(m.getContext());
  llvm::Function* f = create_network_function(m, b, name, lanes * 32);
  llvm::Value* out = network_arg(b, f, 0);
  llvm::Value* in = network_arg(b, f, 1);
  llvm::Value* scale = network_arg(b, f, 2);
  llvm::Value* bias = spec.has_bias ? network_arg(b, f, 3) : nullptr;
  const int64_t len = spec.len, full = len / lanes * lanes;
  llvm::Type* dbl = b.getDoubleTy();
  llvm::Type* dvt = llvm::FixedVectorType::get(dbl, static_cast<unsigned>(lanes));
  llvm::Type* fvt = llvm::FixedVectorType::get(b.getFloatTy(), static_cast<unsigned>(lanes));
  // `width` floats at base + offset, widened to double.
  auto load_wide = [&](llvm::Value* base, llvm::Value* offset, int width) {
    if (width == 1) return b.CreateFPExt(load_scalar(b, base, offset), dbl);
    return b.CreateFPExt(load_vector(b, base, offset, width), dvt);
  };
  auto splat = [&](llvm::Value* scalar, int width) {
    return width == 1 ? scalar : b.CreateVectorSplat(static_cast<unsigned>(width), scalar);
  };
  auto zero = [&](int width) { return splat(llvm::ConstantFP::get(dbl, 0.0), width); };
  // Over the row: `step(j, width, acc)` on each full vector (width = lanes), then on each
  // element of the tail (width 1), each threading an accumulator of its width; the sum of
  // both accumulators' lanes is returned.
  auto over_row = [&](auto step) {
    llvm::Value* total = llvm::ConstantFP::get(dbl, 0.0);
    if (full > 0) {
      LoopState v = emit_for_carried(b, i64(b, 0), i64(b, full / lanes), "vec", {zero(lanes)},
                                     [&](llvm::Value* i, const LoopState& st) {
                                       return LoopState{step(mul_i64(b, i, lanes), lanes, st[0])};
                                     });
      total = b.CreateFAddReduce(total, v[0]);
    }
    if (full < len) {
      LoopState s = emit_for_carried(
          b, i64(b, full), i64(b, len), "tail", {zero(1)},
          [&](llvm::Value* j, const LoopState& st) { return LoopState{step(j, 1, st[0])}; });
      total = b.CreateFAdd(total, s[0]);
    }
    return total;
  };
  llvm::Value* count = llvm::ConstantFP::get(dbl, static_cast<double>(len));
  emit_for(b, f->getArg(1), f->getArg(2), "row", [&](llvm::Value* row) {
    llvm::Value* base = mul_i64(b, row, len);
    auto at = [&](llvm::Value* j) { return add_i64(b, base, j); };
    llvm::Value* mean = b.CreateFDiv(over_row([&](llvm::Value* j, int width, llvm::Value* acc) {
                                       return b.CreateFAdd(acc, load_wide(in, at(j), width));
                                     }),
                                     count);
    llvm::Value* var = b.CreateFDiv(over_row([&](llvm::Value* j, int width, llvm::Value* acc) {
                                      llvm::Value* d = b.CreateFSub(load_wide(in, at(j), width),
                                                                    splat(mean, width));
                                      return b.CreateFAdd(acc, b.CreateFMul(d, d));
                                    }),
                                    count);
    llvm::Function* sqrt = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::sqrt, {dbl});
    llvm::Value* inv = b.CreateFDiv(
        llvm::ConstantFP::get(dbl, 1.0),
        b.CreateCall(sqrt, {b.CreateFAdd(var, llvm::ConstantFP::get(dbl, spec.epsilon))}));
    over_row([&](llvm::Value* j, int width, llvm::Value* acc) {
      // ((x - mean) * inv) * scale + bias, in the interpreter's order.
      llvm::Value* v =
          b.CreateFMul(b.CreateFMul(b.CreateFSub(load_wide(in, at(j), width), splat(mean, width)),
                                    splat(inv, width)),
                       load_wide(scale, j, width));
      if (bias) v = b.CreateFAdd(v, load_wide(bias, j, width));
      store_vector(b, b.CreateFPTrunc(v, width == 1 ? b.getFloatTy() : fvt), out, at(j), width);
      return acc;
    });
  });
  b.CreateRetVoid();
}

}  // namespace tensortune::codegen::emit
