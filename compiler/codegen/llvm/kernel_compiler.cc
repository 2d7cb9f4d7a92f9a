// Implements compiler/codegen/llvm/kernel.h: IR from the template emitters, the pass pipeline, ORC
// JIT.
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <chrono>
#include <mutex>

#include "compiler/codegen/llvm/emitters.h"
#include "compiler/codegen/llvm/int8_amx_tile.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/codegen/llvm/llvm_target.h"
#include "support/stopwatch.h"

namespace tensortune::codegen {

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
  KernelFn fn = impl_->fn;
  pool.parallel_for(impl_->signature.parallel_extent,
                    [&](int64_t b, int64_t e) { fn(data, weight, bias, out, b, e); });
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
  const emit::TemplateEmitFn emit = emit::find_template_emitter(task.template_name);
  if (!emit) return unimplemented("template " + task.template_name + " has no LLVM emitter");
  auto m = std::make_unique<llvm::Module>("tensortune_kernel", ctx);
  const int lanes = task.target.vector_lanes;
  llvm::IRBuilder<> b(ctx);
  emit::AnchorArgs args = emit::begin_anchor_function(*m, b, "kernel", lanes, false, 1);
  args.epilogue = emit::epilogue_of(options);
  emit(*m, b, args, task, space, config);
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
  return ss::template_of(task).signature(task, space, config);
}

bool can_compile_template(std::string_view template_name) {
  return emit::find_template_emitter(template_name) != nullptr;
}

Expected<CompiledKernel> compile_kernel(const ss::Task& task, const ss::ConfigSpace& space,
                                        const ss::Config& config, const KernelOptions& options) {
  const Stopwatch start;
  emit::initialize_llvm();
  TT_ASSIGN_OR_RETURN(KernelSignature sig, kernel_signature(task, space, config));
  auto ctx = std::make_unique<llvm::LLVMContext>();
  TT_ASSIGN_OR_RETURN(auto module, emit_module(*ctx, task, space, config, options));
  TT_ASSIGN_OR_RETURN(auto jtmb, emit::host_machine_builder());
  auto tm = jtmb.createTargetMachine();
  if (!tm)
    return internal_error("cannot create the target machine: " + llvm::toString(tm.takeError()));
  emit::optimize(*module, **tm);

  TT_ASSIGN_OR_RETURN(auto jit, emit::make_jit(std::move(jtmb)));
  if (auto err = jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))))
    return internal_error("JIT rejected the module: " + llvm::toString(std::move(err)));
  auto sym = jit->lookup("kernel");
  if (!sym) return internal_error("JIT compilation failed: " + llvm::toString(sym.takeError()));

  auto impl = std::make_shared<CompiledKernel::Impl>();
  impl->fn = reinterpret_cast<KernelFn>(sym->getAddress());
  impl->jit = std::move(jit);
  impl->signature = sig;
  impl->compile_s = start.seconds();
  return CompiledKernel(std::move(impl));
}

namespace {

Expected<std::string> compile_kernel_file(const ss::Task& task, const ss::ConfigSpace& space,
                                          const ss::Config& config, const CpuDescription& cpu,
                                          llvm::CodeGenFileType type) {
  emit::initialize_llvm();
  llvm::LLVMContext ctx;
  TT_ASSIGN_OR_RETURN(auto module, emit_module(ctx, task, space, config, {}));
  TT_ASSIGN_OR_RETURN(auto jtmb, emit::machine_builder_for(cpu));
  auto tm = jtmb.createTargetMachine();
  if (!tm)
    return internal_error("cannot create the target machine for " + cpu.cpu + ": " +
                          llvm::toString(tm.takeError()));
  emit::optimize(*module, **tm);
  return emit::emit_file(*module, **tm, type);
}

}  // namespace

Expected<std::string> compile_kernel_object(const ss::Task& task, const ss::ConfigSpace& space,
                                            const ss::Config& config, const CpuDescription& cpu) {
  return compile_kernel_file(task, space, config, cpu, llvm::CGFT_ObjectFile);
}

Expected<std::string> kernel_assembly(const ss::Task& task, const ss::ConfigSpace& space,
                                      const ss::Config& config, const CpuDescription& cpu) {
  return compile_kernel_file(task, space, config, cpu, llvm::CGFT_AssemblyFile);
}

Expected<CompiledKernel> load_kernel_object(const std::string& object_code,
                                            const KernelSignature& signature) {
  const Stopwatch start;
  emit::initialize_llvm();
  TT_ASSIGN_OR_RETURN(auto jtmb, emit::host_machine_builder());
  TT_ASSIGN_OR_RETURN(auto jit, emit::make_jit(std::move(jtmb)));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object_code, "tensortune_kernel.o");
  if (auto err = jit->addObjectFile(std::move(buffer)))
    return invalid_argument("the kernel's object code does not load: " +
                            llvm::toString(std::move(err)));
  auto sym = jit->lookup("kernel");
  if (!sym)
    return invalid_argument("the object code has no kernel: " + llvm::toString(sym.takeError()));
  auto impl = std::make_shared<CompiledKernel::Impl>();
  impl->fn = reinterpret_cast<KernelFn>(sym->getAddress());
  impl->jit = std::move(jit);
  impl->signature = signature;
  impl->compile_s = start.seconds();
  return CompiledKernel(std::move(impl));
}

std::string llvm_version() { return "LLVM " LLVM_VERSION_STRING; }

Expected<std::string> kernel_ir(const ss::Task& task, const ss::ConfigSpace& space,
                                const ss::Config& config, const KernelOptions& options,
                                bool optimized) {
  emit::initialize_llvm();
  llvm::LLVMContext ctx;
  TT_ASSIGN_OR_RETURN(auto module, emit_module(ctx, task, space, config, options));
  if (optimized) {
    TT_ASSIGN_OR_RETURN(auto jtmb, emit::host_machine_builder());
    auto tm = jtmb.createTargetMachine();
    if (!tm)
      return internal_error("cannot create the target machine: " + llvm::toString(tm.takeError()));
    emit::optimize(*module, **tm);
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
  t.measured_cpu = host_cpu_model();
  return t;
}

bool host_has_int8_dot() {
  llvm::StringMap<bool> features;
  llvm::sys::getHostCPUFeatures(features);
  return features.lookup("avx512vnni");
}

bool host_has_amx_int8() { return emit::host_runs_amx_int8(); }

std::string host_device_key() {
  llvm::StringMap<bool> features;
  llvm::sys::getHostCPUFeatures(features);
  if (features.lookup("avx512f")) return "x86-avx512";
  if (features.lookup("avx2")) return "x86-avx2";
  if (features.lookup("sse2")) return "x86-sse";
  return "cpu";
}

}  // namespace tensortune::codegen
