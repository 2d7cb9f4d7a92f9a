#include "compiler/codegen/cuda/emulator.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/codegen/cuda/emulation_prelude.h"

namespace tensortune::codegen::cuda {
namespace {

using EmulateFn = const char* (*)(const float* const*, const long long*);

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

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
  namespace fs = std::filesystem;
  std::string dir_template = (fs::temp_directory_path() / "tt-emulate-XXXXXX").string();
  if (!mkdtemp(dir_template.data()))
    return internal_error("cannot create a temporary directory under " +
                          fs::temp_directory_path().string());
  const fs::path dir = dir_template;
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};

  const fs::path source = dir / "kernel.cc", library = dir / "kernel.so", log = dir / "log.txt";
  {
    std::ofstream out(source);
    out << kEmulationPrelude << kernel.source << emulation_launcher(kernel);
    if (!out) return internal_error("cannot write " + source.string());
  }
  const std::string compiler = emulation_compiler();
  const std::string command = shell_quote(compiler) + " -std=c++17 -O1 -w -shared -fPIC -o " +
                              shell_quote(library.string()) + " " + shell_quote(source.string()) +
                              " > " + shell_quote(log.string()) + " 2>&1";
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status))
    return unavailable("cannot run the host C++ compiler '" + compiler +
                       "' for CUDA emulation (set TT_EMULATION_CXX)");
  if (WEXITSTATUS(status) == 127)
    return unavailable("CUDA emulation needs a host C++ compiler: '" + compiler +
                       "' was not found (install g++ or set TT_EMULATION_CXX)");
  if (WEXITSTATUS(status) != 0)
    return internal_error("compiling " + kernel.entry + " for emulation failed:\n" +
                          first_lines(read_file(log), 12));

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
