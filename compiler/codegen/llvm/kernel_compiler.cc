// Implements compiler/kernel.h: IR emission, the O3 pipeline and ORC JIT compilation.
#include "compiler/kernel.h"

#include <chrono>
#include <mutex>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/llvm_target.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/dense_template.h"

namespace tensortune::compiler {

namespace ss = schedule_space;

struct CompiledKernel::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  KernelFn fn = nullptr;
  KernelSignature signature;
  double compile_s = 0;
};

const KernelSignature& CompiledKernel::signature() const { return impl_->signature; }
KernelFn CompiledKernel::function() const { return impl_->fn; }
double CompiledKernel::compile_seconds() const { return impl_->compile_s; }

void CompiledKernel::run(const float* data, const float* weight, const float* bias, float* out,
                         ThreadPool& pool) const {
  const int64_t extent = impl_->signature.parallel_extent;
  const int threads = pool.size();
  KernelFn fn = impl_->fn;
  if (threads == 1) {
    fn(data, weight, bias, out, 0, extent);
    return;
  }
  pool.run_on_all([&](int t) {
    const int64_t b = extent * t / threads, e = extent * (t + 1) / threads;
    if (b < e) fn(data, weight, bias, out, b, e);
  });
}

namespace {

Error invalid_config(const ss::ConfigSpace& space, const ss::Config& config) {
  return Error{ErrorCode::kFailedPrecondition,
               space.template_name() + ": config " + std::to_string(config.index) + " (" +
                   space.describe(config) + ") is invalid: its register tile does not fit"};
}

Expected<std::unique_ptr<llvm::Module>> emit_module(llvm::LLVMContext& ctx, const ss::Task& task,
                                                    const ss::ConfigSpace& space,
                                                    const ss::Config& config,
                                                    const KernelOptions& options) {
  if (!space.is_valid(config)) return invalid_config(space, config);
  auto m = std::make_unique<llvm::Module>("tensortune_kernel", ctx);
  const int lanes = task.target.vector_lanes;
  llvm::IRBuilder<> b(ctx);
  codegen::AnchorArgs args = codegen::begin_anchor_function(*m, b, "kernel", lanes, false, 1);
  args.epilogue = codegen::epilogue_of(options);
  if (task.template_name == ss::kConv2dNCHWc) {
    codegen::emit_conv2d_nchwc(*m, b, args, std::get<ss::Conv2dWorkload>(task.workload),
                               ss::conv2d_nchwc_schedule(space, config), lanes);
  } else {
    const bool packed = task.template_name == ss::kDensePack;
    codegen::emit_dense(b, args, std::get<ss::DenseWorkload>(task.workload),
                        ss::dense_schedule(space, config, packed), lanes);
  }
  b.CreateRetVoid();
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*m, &es))
    return internal_error("generated IR does not verify: " + es.str());
  return m;
}

}  // namespace

Expected<KernelSignature> kernel_signature(const ss::Task& task, const ss::ConfigSpace& space,
                                           const ss::Config& config) {
  if (!space.is_valid(config)) return invalid_config(space, config);
  KernelSignature sig;
  if (task.template_name == ss::kConv2dNCHWc) {
    const auto& w = std::get<ss::Conv2dWorkload>(task.workload);
    const auto s = ss::conv2d_nchwc_schedule(space, config);
    sig.data_shape = {w.batch, w.in_channels / s.ic_bn, w.in_height, w.in_width, s.ic_bn};
    sig.weight_shape = {w.out_channels / s.oc_bn, w.in_channels / s.ic_bn, w.kernel_h, w.kernel_w,
                        s.ic_bn, s.oc_bn};
    sig.out_shape = {w.batch, w.out_channels / s.oc_bn, w.out_height(), w.out_width(), s.oc_bn};
    sig.parallel_extent = w.batch * (w.out_channels / s.oc_bn) * ((w.out_height() + s.reg_h - 1) / s.reg_h);
    sig.ic_block = s.ic_bn;
    sig.oc_block = s.oc_bn;
  } else {
    const auto& w = std::get<ss::DenseWorkload>(task.workload);
    const bool packed = task.template_name == ss::kDensePack;
    const auto s = ss::dense_schedule(space, config, packed);
    sig.data_shape = {w.batch, w.in_features};
    sig.out_shape = {w.batch, w.out_features};
    if (packed) {
      sig.weight_shape = {w.out_features / s.xi, w.in_features, s.xi};
      sig.parallel_extent = (w.batch / (s.yo * s.yi)) * (w.out_features / (s.xo * s.xi));
      sig.oc_block = s.xi;
    } else {
      sig.weight_shape = {w.out_features, w.in_features};
      sig.parallel_extent = (w.batch / s.yi) * (w.out_features / s.xi);
    }
  }
  return sig;
}

Expected<CompiledKernel> compile_kernel(const ss::Task& task, const ss::ConfigSpace& space,
                                        const ss::Config& config, const KernelOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  codegen::initialize_llvm();
  TT_ASSIGN_OR_RETURN(KernelSignature sig, kernel_signature(task, space, config));
  auto ctx = std::make_unique<llvm::LLVMContext>();
  TT_ASSIGN_OR_RETURN(auto module, emit_module(*ctx, task, space, config, options));
  TT_ASSIGN_OR_RETURN(auto jtmb, codegen::host_machine_builder());
  auto tm = jtmb.createTargetMachine();
  if (!tm) return internal_error("cannot create the target machine: " + llvm::toString(tm.takeError()));
  codegen::optimize(*module, **tm);

  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!jit) return internal_error("cannot create the JIT: " + llvm::toString(jit.takeError()));
  // Lets kernels call libm (fmaf, fmaxf) where the CPU lacks an instruction LLVM would use.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process) return internal_error("JIT cannot see the process's symbols: " + llvm::toString(process.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))))
    return internal_error("JIT rejected the module: " + llvm::toString(std::move(err)));
  auto sym = (*jit)->lookup("kernel");
  if (!sym) return internal_error("JIT compilation failed: " + llvm::toString(sym.takeError()));

  auto impl = std::make_shared<CompiledKernel::Impl>();
  impl->fn = reinterpret_cast<KernelFn>(sym->getAddress());
  impl->jit = std::move(*jit);
  impl->signature = sig;
  impl->compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return CompiledKernel(std::move(impl));
}

Expected<std::string> kernel_ir(const ss::Task& task, const ss::ConfigSpace& space,
                                const ss::Config& config, const KernelOptions& options,
                                bool optimized) {
  codegen::initialize_llvm();
  llvm::LLVMContext ctx;
  TT_ASSIGN_OR_RETURN(auto module, emit_module(ctx, task, space, config, options));
  if (optimized) {
    TT_ASSIGN_OR_RETURN(auto jtmb, codegen::host_machine_builder());
    auto tm = jtmb.createTargetMachine();
    if (!tm) return internal_error("cannot create the target machine: " + llvm::toString(tm.takeError()));
    codegen::optimize(*module, **tm);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  return os.str();
}

ss::Target host_target() {
  llvm::StringMap<bool> features;
  llvm::sys::getHostCPUFeatures(features);
  ss::Target t;
  t.spec = "llvm -keys=cpu -mcpu=" + llvm::sys::getHostCPUName().str();
  t.vector_lanes = features.lookup("avx512f") ? 16 : features.lookup("avx") ? 8 : 4;
  return t;
}

std::string host_device_key() {
  llvm::StringMap<bool> features;
  llvm::sys::getHostCPUFeatures(features);
  if (features.lookup("avx512f")) return "x86-avx512";
  if (features.lookup("avx2")) return "x86-avx2";
  if (features.lookup("sse2")) return "x86-sse";
  return "cpu";
}

}  // namespace tensortune::compiler
