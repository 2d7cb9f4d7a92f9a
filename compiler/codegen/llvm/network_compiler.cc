// Implements compiler/codegen/llvm/network_kernels.h: a network's kernels into object files, and
// object files back into callable code.
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/llvm_target.h"
#include "compiler/codegen/llvm/network_kernels.h"

namespace tensortune::codegen {

namespace ss = schedule_space;

int64_t parallel_extent(const NetworkKernelSpec& spec) {
  if (const auto* t = std::get_if<TemplateKernelSpec>(&spec))
    return t->kernel.signature().parallel_extent;
  if (const auto* c = std::get_if<DepthwiseKernelSpec>(&spec))
    return c->workload.batch * (c->workload.out_channels / c->block) * c->workload.out_height();
  if (const auto* p = std::get_if<MaxPoolKernelSpec>(&spec))
    return p->in_shape[0] * p->in_shape[1] * p->out_h;
  if (const auto* x = std::get_if<SoftmaxKernelSpec>(&spec)) return x->rows;
  if (const auto* l = std::get_if<LayerNormKernelSpec>(&spec)) return l->rows;
  const auto& e = std::get<ElementwiseKernelSpec>(spec);
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < e.out_shape.size(); ++d) rows *= e.out_shape[d];
  return rows;
}

namespace {

void put_ints(std::ostringstream& os, const std::vector<int64_t>& v) {
  os << '[';
  for (int64_t x : v) os << x << ',';
  os << ']';
}

void put_epilogue(std::ostringstream& os, const std::vector<epilogue::EpilogueOp>& ops) {
  for (const auto& op : ops)
    os << " e" << static_cast<int>(op.kind) << ':' << op.operand << ':' << op.lo << ':' << op.hi
       << ':' << op.zero_point << ':' << op.scale;
}

}  // namespace

std::string spec_key(const NetworkKernelSpec& spec) {
  std::ostringstream os;
  os << std::setprecision(9);  // float parameters (clip bounds, alphas) exactly
  os.precision(9);
  if (const auto* t = std::get_if<TemplateKernelSpec>(&spec)) {
    // A template's kernel is its task (workload key) and config.
    os << ss::workload_key(t->kernel.task) << " | " << t->kernel.config.index;
    if (t->pad_value != 0) os << " pad " << t->pad_value;
    put_epilogue(os, t->epilogue);
  } else if (const auto* c = std::get_if<DepthwiseKernelSpec>(&spec)) {
    const auto& w = c->workload;
    os << "depthwise " << w.batch << ' ' << w.in_channels << ' ' << w.in_height << ' ' << w.in_width
       << ' ' << w.out_channels << ' ' << w.kernel_h << ' ' << w.kernel_w << ' ' << w.stride_h
       << ' ' << w.stride_w << ' ' << w.pad_top << ' ' << w.pad_left << ' ' << w.pad_bottom << ' '
       << w.pad_right << ' ' << w.dilation_h << ' ' << w.dilation_w << " | " << c->block << ' '
       << c->row_width;
    put_epilogue(os, c->epilogue);
  } else if (const auto* p = std::get_if<MaxPoolKernelSpec>(&spec)) {
    os << (p->average ? "avg_pool " : "max_pool ");
    put_ints(os, p->in_shape);
    put_ints(os, {p->out_h, p->out_w, p->kernel_h, p->kernel_w, p->stride_h, p->stride_w,
                  p->pad_top, p->pad_left, p->dilation_h, p->dilation_w, p->count_include_pad,
                  p->pad_bottom, p->pad_right});
  } else if (const auto* x = std::get_if<SoftmaxKernelSpec>(&spec)) {
    os << "softmax " << x->rows << ' ' << x->len;
  } else if (const auto* l = std::get_if<LayerNormKernelSpec>(&spec)) {
    os << std::setprecision(17) << "layer_norm " << l->rows << ' ' << l->len << ' ' << l->epsilon
       << (l->has_bias ? " bias" : "");
  } else {
    const auto& e = std::get<ElementwiseKernelSpec>(spec);
    os << "elementwise ";
    if (e.out_dtype != DType::kFloat32)
      os << dtype_name(e.out_dtype) << (e.cast_input_bounded ? " bounded " : " ");
    put_ints(os, e.out_shape);
    for (const auto& s : e.operand_strides) put_ints(os, s);
    for (const auto& in : e.program)
      os << ' ' << static_cast<int>(in.op) << ':' << in.a << ':' << in.b << ':' << in.p0 << ':'
         << in.p1;
  }
  return os.str();
}

namespace {

void emit_kernel(llvm::Module& m, const NamedKernel& k, int lanes) {
  if (const auto* e = std::get_if<ElementwiseKernelSpec>(&k.spec)) {
    emit::emit_elementwise(m, k.symbol, *e, lanes);
    return;
  }
  if (const auto* p = std::get_if<MaxPoolKernelSpec>(&k.spec)) {
    emit::emit_max_pool(m, k.symbol, *p, lanes);
    return;
  }
  if (const auto* x = std::get_if<SoftmaxKernelSpec>(&k.spec)) {
    emit::emit_softmax(m, k.symbol, *x, lanes);
    return;
  }
  if (const auto* l = std::get_if<LayerNormKernelSpec>(&k.spec)) {
    emit::emit_layer_norm(m, k.symbol, *l, lanes);
    return;
  }
  llvm::IRBuilder<> b(m.getContext());
  if (const auto* t = std::get_if<TemplateKernelSpec>(&k.spec)) {
    const size_t inputs = static_cast<size_t>(t->kernel.tmpl().extra_inputs(t->kernel.task));
    emit::AnchorArgs args = emit::begin_anchor_function(
        m, b, k.symbol, lanes, true, inputs + epilogue::epilogue_operand_count(t->epilogue));
    // The template's own inputs come first; the epilogue's operands count from after them.
    args.inputs.assign(args.operands.begin(), args.operands.begin() + inputs);
    args.operands.erase(args.operands.begin(), args.operands.begin() + inputs);
    args.epilogue = t->epilogue;
    args.pad_value = t->pad_value;
    const emit::TemplateEmitFn emit = emit::find_template_emitter(t->kernel.task.template_name);
    TT_CHECK(emit != nullptr) << "no LLVM emitter for " << t->kernel.task.template_name
                              << " (the lowering chose only templates of this backend)";
    emit(m, b, args, t->kernel.task, t->kernel.space, t->kernel.config);
  } else {
    const auto& d = std::get<DepthwiseKernelSpec>(k.spec);
    emit::AnchorArgs args = emit::begin_anchor_function(
        m, b, k.symbol, lanes, true, epilogue::epilogue_operand_count(d.epilogue));
    args.epilogue = d.epilogue;
    emit::emit_depthwise_nchwc(
        b, args, d.workload, schedule_space::DepthwiseSchedule{d.block, d.block, d.row_width, true},
        lanes);
  }
  b.CreateRetVoid();
}

/// One module of kernels to one object file.
Expected<std::string> compile_shard(const std::vector<NamedKernel>& kernels, int lanes) {
  llvm::LLVMContext ctx;
  auto m = std::make_unique<llvm::Module>("tensortune_network", ctx);
  for (const auto& k : kernels) emit_kernel(*m, k, lanes);
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*m, &es))
    return internal_error("generated network IR does not verify: " + es.str());
  TT_ASSIGN_OR_RETURN(auto jtmb, emit::host_machine_builder());
  auto tm = jtmb.createTargetMachine();
  if (!tm)
    return internal_error("cannot create the target machine: " + llvm::toString(tm.takeError()));
  emit::optimize(*m, **tm);
  return emit::emit_object_file(*m, **tm);
}

}  // namespace

Expected<std::string> compile_network_object(const std::vector<NamedKernel>& kernels,
                                             int vector_lanes) {
  emit::initialize_llvm();
  return compile_shard(kernels, vector_lanes);
}

struct LoadedObject::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

Expected<LoadedObject> LoadedObject::load(const std::string& object_code) {
  emit::initialize_llvm();
  TT_ASSIGN_OR_RETURN(auto jtmb, emit::host_machine_builder());
  TT_ASSIGN_OR_RETURN(auto jit, emit::make_jit(std::move(jtmb)));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object_code, "tensortune_network.o");
  if (auto err = jit->addObjectFile(std::move(buffer)))
    return Error{ErrorCode::kInvalidArgument,
                 "the object code does not load: " + llvm::toString(std::move(err))};
  auto impl = std::make_shared<Impl>();
  impl->jit = std::move(jit);
  return LoadedObject(std::move(impl));
}

Expected<NetworkKernelFn> LoadedObject::lookup(const std::string& symbol) const {
  auto sym = impl_->jit->lookup(symbol);
  if (!sym) {
    llvm::consumeError(sym.takeError());
    return Error{ErrorCode::kNotFound, "kernel '" + symbol + "' is not in the object code"};
  }
  return reinterpret_cast<NetworkKernelFn>(sym->getAddress());
}

}  // namespace tensortune::codegen
