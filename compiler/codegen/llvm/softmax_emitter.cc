// Softmax over rows: the row's max (vectors, then across lanes), each exponential of x - max
// stored and summed as vectors (the float exp of float_math.h), then each divided by the sum.
// A row is read twice and written twice, in L1 for rows of a few thousand floats.
#include <llvm/IR/Module.h>

#include <limits>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/float_math.h"
#include "compiler/codegen/llvm/ir_helpers.h"
#include "compiler/codegen/llvm/register_tile.h"

namespace tensortune::codegen::emit {

void emit_softmax(llvm::Module& m, const std::string& name, const SoftmaxKernelSpec& spec,
                  int lanes) {
  llvm::IRBuilder<> b(m.getContext());
  llvm::Function* f = create_network_function(m, b, name, lanes * 32);
  llvm::Value* out = network_arg(b, f, 0);
  llvm::Value* in = network_arg(b, f, 1);
  const int64_t len = spec.len, full = len / lanes * lanes;
  llvm::Type* vt = llvm::FixedVectorType::get(b.getFloatTy(), static_cast<unsigned>(lanes));
  llvm::Value* zero = llvm::ConstantFP::get(vt, 0.0);
  // Over the row: `vector(j)` on each full vector, `scalar(j)` on the tail, each threading a value.
  auto over_row = [&](llvm::Value* vector_init, llvm::Value* scalar_init, auto vector,
                      auto scalar) {
    LoopState v{vector_init}, s{scalar_init};
    if (full > 0)
      v = emit_for_carried(b, i64(b, 0), i64(b, full / lanes), "vec", v,
                           [&](llvm::Value* i, const LoopState& st) {
                             return LoopState{vector(mul_i64(b, i, lanes), st[0])};
                           });
    if (full < len)
      s = emit_for_carried(
          b, i64(b, full), i64(b, len), "tail", s,
          [&](llvm::Value* j, const LoopState& st) { return LoopState{scalar(j, st[0])}; });
    return std::pair{v[0], s[0]};
  };
  emit_for(b, f->getArg(1), f->getArg(2), "row", [&](llvm::Value* row) {
    llvm::Value* base = mul_i64(b, row, len);
    auto at = [&](llvm::Value* j) { return add_i64(b, base, j); };
    llvm::Value* lowest =
        llvm::ConstantFP::get(b.getFloatTy(), -std::numeric_limits<float>::infinity());
    auto [vmax, smax] = over_row(
        b.CreateVectorSplat(static_cast<unsigned>(lanes), lowest), lowest,
        [&](llvm::Value* j, llvm::Value* acc) {
          return max_of(b, acc, load_vector(b, in, at(j), lanes));
        },
        [&](llvm::Value* j, llvm::Value* acc) {
          return max_of(b, acc, load_scalar(b, in, at(j)));
        });
    llvm::Value* top = smax;
    for (int l = 0; l < lanes && full > 0; ++l)
      top = max_of(b, top, b.CreateExtractElement(vmax, l));
    llvm::Value* top_v = b.CreateVectorSplat(static_cast<unsigned>(lanes), top);
    auto [vsum, ssum] = over_row(
        zero, llvm::ConstantFP::get(b.getFloatTy(), 0.0),
        [&](llvm::Value* j, llvm::Value* acc) {
          llvm::Value* e = exp_f32(b, b.CreateFSub(load_vector(b, in, at(j), lanes), top_v));
          store_vector(b, e, out, at(j), lanes);
          return b.CreateFAdd(acc, e);
        },
        [&](llvm::Value* j, llvm::Value* acc) {
          llvm::Value* e = exp_f32(b, b.CreateFSub(load_scalar(b, in, at(j)), top));
          store_vector(b, e, out, at(j), 1);
          return b.CreateFAdd(acc, e);
        });
    llvm::Value* sum = b.CreateFAdd(horizontal_sum(b, vsum), ssum);
    llvm::Value* sum_v = b.CreateVectorSplat(static_cast<unsigned>(lanes), sum);
    over_row(
        zero, llvm::ConstantFP::get(b.getFloatTy(), 0.0),
        [&](llvm::Value* j, llvm::Value* acc) {
          store_vector(b, b.CreateFDiv(load_vector(b, out, at(j), lanes), sum_v), out, at(j),
                       lanes);
          return acc;
        },
        [&](llvm::Value* j, llvm::Value* acc) {
          store_vector(b, b.CreateFDiv(load_scalar(b, out, at(j)), sum), out, at(j), 1);
          return acc;
        });
  });
  b.CreateRetVoid();
}

}  // namespace tensortune::codegen::emit
