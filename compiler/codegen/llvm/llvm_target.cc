// Implements llvm_target.h.
#include "compiler/codegen/llvm/llvm_target.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>

#include <mutex>

#include "compiler/codegen/llvm/int8_amx_tile.h"

namespace tensortune::codegen::emit {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

Expected<llvm::orc::JITTargetMachineBuilder> host_machine_builder() {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return internal_error("cannot detect the host target: " + llvm::toString(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  return std::move(*jtmb);
}

Expected<llvm::orc::JITTargetMachineBuilder> machine_builder_for(const CpuDescription& cpu) {
  const CpuDescription host = host_cpu();
  if (cpu.triple == host.triple && cpu.cpu == host.cpu && cpu.features == host.features)
    return host_machine_builder();
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(cpu.triple)};
  jtmb.setCPU(cpu.cpu);
  std::vector<std::string> features;
  for (const std::string& f : cpu.features) features.push_back("+" + f);
  jtmb.addFeatures(features);
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  return jtmb;
}

Expected<std::string> emit_object_file(llvm::Module& m, llvm::TargetMachine& tm) {
  return emit_file(m, tm, llvm::CGFT_ObjectFile);
}

Expected<std::string> emit_file(llvm::Module& m, llvm::TargetMachine& tm,
                                llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    return internal_error("the target cannot emit this kind of file");
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

Expected<std::unique_ptr<llvm::orc::LLJIT>> make_jit(llvm::orc::JITTargetMachineBuilder jtmb) {
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!jit) return internal_error("cannot create the JIT: " + llvm::toString(jit.takeError()));
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return internal_error("JIT cannot see the process's symbols: " +
                          llvm::toString(process.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  // Every generated kernel runs from a JIT: int8 kernels built for a CPU with AMX use its
  // tiles, whose state the process must ask Linux for before the first one runs.
  enable_amx_tiles();
  return std::move(*jit);
}

constexpr char kPipeline[] =
    "function(sroa,early-cse<memssa>,instcombine,loop-mssa(licm),simplifycfg)";

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  m.setDataLayout(tm.createDataLayout());
  m.setTargetTriple(tm.getTargetTriple().str());
  for (llvm::Function& f : m) {
    f.addFnAttr("target-cpu", tm.getTargetCPU());
    f.addFnAttr("target-features", tm.getTargetFeatureString());
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  // Our IR is already vectorised, unrolled where the schedule says and free of calls, so the
  // generic O3 pipeline (inliner, loop vectoriser, IndVarSimplify over every GEP) would spend
  // most of the compile time finding nothing. This short pipeline cleans up what we emit:
  // promotes accumulators to registers, removes redundant address arithmetic and hoists
  // loop-invariant loads and addresses.
  llvm::ModulePassManager mpm;
  if (auto err = pb.parsePassPipeline(mpm, kPipeline)) {
    TT_CHECK(false) << "the built-in pass pipeline does not parse: "
                    << llvm::toString(std::move(err));
  }
  mpm.run(m, mam);
}

}  // namespace tensortune::codegen::emit
