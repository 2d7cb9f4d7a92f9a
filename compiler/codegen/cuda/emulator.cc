#include "compiler/codegen/cuda/emulator.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/codegen/cuda/emulation_prelude.h"
#include "compiler/codegen/cuda/host_tool.h"

namespace tensortune::codegen::cuda {
namespace {

using EmulateFn = const char* (*)(const float* const*, const long long*);

// The first lines of a compiler's complaint: enough to see what is wrong.
std::string first_lines(const std::string& text, int n) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (n-- > 0 && std::getline(in, line)) out += (out.empty() ? "" : "\n") + line;
  return out;
}

}  // namespace

struct EmulatedKernel::Impl {
  CudaKernelSource kernel;
  std::shared_ptr<void> library;
  EmulateFn emulate = nullptr;
};

const CudaKernelSource& EmulatedKernel::kernel() const { return impl_->kernel; }

Status EmulatedKernel::launch(const float* data, const float* weight, float* out,
                              const std::vector<const float*>& operands) const {
  const CudaKernelSource& k = impl_->kernel;
  if (static_cast<int>(operands.size()) != k.epilogue_operands)
    return invalid_argument(k.entry + " takes " + std::to_string(k.epilogue_operands) +
                            " epilogue operands, not " + std::to_string(operands.size()));
  std::vector<const float*> args{data, weight, out};
  args.insert(args.end(), operands.begin(), operands.end());
  const long long dims[6] = {k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z};
  if (const char* error = impl_->emulate(args.data(), dims))
    return internal_error(k.entry + " (emulated): " + error);
  return ok_status();
}

std::string emulation_compiler() {
  if (const char* env = std::getenv("TT_EMULATION_CXX"); env && *env) return env;
#ifdef TT_HOST_CXX
  if (std::filesystem::exists(TT_HOST_CXX)) return TT_HOST_CXX;
#endif
  return "c++";
}

Expected<EmulatedKernel> compile_for_emulation(const CudaKernelSource& kernel) {
  TT_ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::create("tt-emulate"));
  const std::filesystem::path source = dir / "kernel.cc", library = dir / "kernel.so";
  {
    std::ofstream out(source);
    out << kEmulationPrelude << kernel.source << emulation_launcher(kernel);
    if (!out) return internal_error("cannot write " + source.string());
  }
  const std::string compiler = emulation_compiler();
  const ToolRun run = run_tool({compiler, "-std=c++17", "-O1", "-w", "-shared", "-fPIC", "-o",
                                library.string(), source.string()},
                               dir / "log.txt");
  if (run.exit_code == -1)
    return unavailable("cannot run the host C++ compiler '" + compiler +
                       "' for CUDA emulation (set TT_EMULATION_CXX)");
  if (run.exit_code == 127)
    return unavailable("CUDA emulation needs a host C++ compiler: '" + compiler +
                       "' was not found (install g++ or set TT_EMULATION_CXX)");
  if (run.exit_code != 0)
    return internal_error("compiling " + kernel.entry + " for emulation failed:\n" +
                          first_lines(run.output, 12));

  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return internal_error(std::string("loading the emulated kernel: ") + dlerror());
  auto impl = std::make_shared<EmulatedKernel::Impl>();
  impl->kernel = kernel;
  impl->library = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
  impl->emulate = reinterpret_cast<EmulateFn>(dlsym(handle, "tt_emulate"));
  if (!impl->emulate) return internal_error("the emulated kernel has no tt_emulate entry");
  return EmulatedKernel(std::move(impl));
}

}  // namespace tensortune::codegen::cuda
