// Implements cpu_description.h with LLVM's host detection and its x86 CPU table.
#include "compiler/codegen/llvm/cpu_description.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/X86TargetParser.h>

#include <algorithm>

namespace tensortune::codegen {

namespace {

int lanes_of(const std::vector<std::string>& sorted_features) {
  auto has = [&](const char* f) {
    return std::binary_search(sorted_features.begin(), sorted_features.end(), std::string(f));
  };
  return has("avx512f") ? 16 : has("avx") ? 8 : 4;
}

}  // namespace

CpuDescription host_cpu() {
  CpuDescription cpu;
  cpu.triple = llvm::sys::getProcessTriple();
  cpu.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features;
  llvm::sys::getHostCPUFeatures(features);
  for (const auto& f : features)
    if (f.getValue()) cpu.features.push_back(f.getKey().str());
  std::sort(cpu.features.begin(), cpu.features.end());
  cpu.vector_lanes = lanes_of(cpu.features);
  return cpu;
}

Expected<CpuDescription> cpu_for_target_spec(const std::string& spec, int vector_lanes) {
  CpuDescription host = host_cpu();
  const size_t at = spec.find("-mcpu=");
  if (at == std::string::npos) return host;
  const size_t begin = at + 6;
  const std::string name = spec.substr(begin, spec.find(' ', begin) - begin);
  if (name == host.cpu && (vector_lanes == 0 || vector_lanes == host.vector_lanes)) return host;
  const bool x86 = host.triple.starts_with("x86_64") || host.triple.starts_with("i686");
  if (!x86 || llvm::X86::parseArchX86(name, /*Only64Bit=*/true) == llvm::X86::CK_None)
    return invalid_argument("target '" + spec + "': CPU '" + name +
                            "' is not one this build's LLVM knows for " + host.triple);
  CpuDescription cpu;
  cpu.triple = host.triple;
  cpu.cpu = name;
  llvm::SmallVector<llvm::StringRef, 64> features;
  llvm::X86::getFeaturesForCPU(name, features);
  for (llvm::StringRef f : features) cpu.features.push_back(f.str());
  std::sort(cpu.features.begin(), cpu.features.end());
  cpu.features.erase(std::unique(cpu.features.begin(), cpu.features.end()), cpu.features.end());
  cpu.vector_lanes = lanes_of(cpu.features);
  return cpu;
}

std::vector<std::string> missing_features(const CpuDescription& required,
                                          const CpuDescription& host) {
  std::vector<std::string> missing;
  for (const auto& f : required.features)
    if (!std::binary_search(host.features.begin(), host.features.end(), f)) missing.push_back(f);
  return missing;
}

}  // namespace tensortune::codegen
