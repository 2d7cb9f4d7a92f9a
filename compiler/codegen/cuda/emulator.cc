#include "compiler/codegen/cuda/emulator.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "compiler/codegen/cuda/emulation_prelude.h"
#include "compiler/codegen/cuda/host_tool.h"

namespace tensortune::codegen::cuda {
namespace {

using EmulateFn = const char* (*)(float* const*, const long long*);

// The first lines of a compiler's complaint: enough to see what is wrong.
std::string first_lines(const std::string& text, int n) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (n-- > 0 && std::getline(in, line)) out += (out.empty() ? "" : "\n") + line;
  return out;
}

}  // namespace

struct EmulatedModule::Impl {
  std::vector<CudaKernelSource> kernels;
  std::vector<EmulateFn> emulate;  // by kernel
  std::shared_ptr<void> library;
};

const std::vector<CudaKernelSource>& EmulatedModule::kernels() const { return impl_->kernels; }

Status EmulatedModule::launch(size_t index, const std::vector<float*>& args,
                              ThreadPool* pool) const {
  if (index >= impl_->kernels.size())
    return invalid_argument("kernel " + std::to_string(index) + " of a module of " +
                            std::to_string(impl_->kernels.size()));
  const CudaKernelSource& k = impl_->kernels[index];
  if (static_cast<int>(args.size()) != k.arg_count)
    return invalid_argument(k.entry + " takes " + std::to_string(k.arg_count) + " arguments, not " +
                            std::to_string(args.size()));
  const EmulateFn emulate = impl_->emulate[index];
  auto run_blocks = [&](int64_t first, int64_t end) -> const char* {
    const long long dims[8] = {k.grid.x,  k.grid.y,  k.grid.z, k.block.x,
                               k.block.y, k.block.z, first,    end};
    return emulate(args.data(), dims);
  };
  if (!pool || pool->size() == 1 || k.grid.count() == 1) {
    if (const char* error = run_blocks(0, k.grid.count()))
      return internal_error(k.entry + " (emulated): " + error);
    return ok_status();
  }
  std::mutex mutex;
  std::string first_error;
  pool->parallel_for(k.grid.count(), [&](int64_t first, int64_t end) {
    if (const char* error = run_blocks(first, end)) {
      std::lock_guard<std::mutex> lock(mutex);
      if (first_error.empty()) first_error = error;  // copied: the text is thread_local
    }
  });
  if (!first_error.empty()) return internal_error(k.entry + " (emulated): " + first_error);
  return ok_status();
}

const CudaKernelSource& EmulatedKernel::kernel() const { return module_.kernels().front(); }

Status EmulatedKernel::launch(const float* data, const float* weight, float* out,
                              const std::vector<const float*>& operands) const {
  const CudaKernelSource& k = kernel();
  if (static_cast<int>(operands.size()) != k.epilogue_operands)
    return invalid_argument(k.entry + " takes " + std::to_string(k.epilogue_operands) +
                            " epilogue operands, not " + std::to_string(operands.size()));
  // The kernel reads but never writes the inputs: the ABI's const is the generated code's.
  std::vector<float*> args{const_cast<float*>(data), const_cast<float*>(weight), out};
  for (const float* p : operands) args.push_back(const_cast<float*>(p));
  return module_.launch(0, args);
}

std::string emulation_compiler() {
  if (const char* env = std::getenv("TT_EMULATION_CXX"); env && *env) return env;
#ifdef TT_HOST_CXX
  if (std::filesystem::exists(TT_HOST_CXX)) return TT_HOST_CXX;
#endif
  return "c++";
}

Expected<EmulatedModule> compile_module_for_emulation(
    const std::vector<CudaKernelSource>& kernels) {
  std::set<std::string> entries;
  for (const CudaKernelSource& k : kernels)
    if (!entries.insert(k.entry).second)
      return invalid_argument("two kernels of one module are both named " + k.entry);
  TT_ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::create("tt-emulate"));
  const std::filesystem::path source = dir / "kernel.cc", library = dir / "kernel.so";
  {
    std::ofstream out(source);
    out << kEmulationPrelude;
    for (const CudaKernelSource& k : kernels) out << k.source << emulation_launcher(k);
    if (!out) return internal_error("cannot write " + source.string());
  }
  const std::string compiler = emulation_compiler();
  const ToolRun run = run_tool({compiler, "-std=c++17", "-O1", "-w", "-shared", "-fPIC", "-o",
                                library.string(), source.string()},
                               dir / "log.txt");
  const std::string what =
      kernels.size() == 1 ? kernels[0].entry : std::to_string(kernels.size()) + " kernels";
  if (run.exit_code == -1)
    return unavailable("cannot run the host C++ compiler '" + compiler +
                       "' for CUDA emulation (set TT_EMULATION_CXX)");
  if (run.exit_code == 127)
    return unavailable("CUDA emulation needs a host C++ compiler: '" + compiler +
                       "' was not found (install g++ or set TT_EMULATION_CXX)");
  if (run.exit_code != 0)
    return internal_error("compiling " + what + " for emulation failed:\n" +
                          first_lines(run.output, 12));

  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return internal_error(std::string("loading the emulated kernel: ") + dlerror());
  auto impl = std::make_shared<EmulatedModule::Impl>();
  impl->kernels = kernels;
  impl->library = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
  for (const CudaKernelSource& k : kernels) {
    auto fn = reinterpret_cast<EmulateFn>(dlsym(handle, ("tt_emulate_" + k.entry).c_str()));
    if (!fn) return internal_error("the emulated module has no launcher for " + k.entry);
    impl->emulate.push_back(fn);
  }
  return EmulatedModule(std::move(impl));
}

Expected<EmulatedKernel> compile_for_emulation(const CudaKernelSource& kernel) {
  TT_ASSIGN_OR_RETURN(EmulatedModule module, compile_module_for_emulation({kernel}));
  return EmulatedKernel(std::move(module));
}

}  // namespace tensortune::codegen::cuda
