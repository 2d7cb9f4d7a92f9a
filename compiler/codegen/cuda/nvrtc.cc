#include "compiler/codegen/cuda/nvrtc.h"

#include <dlfcn.h>
#include <nvrtc.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <vector>

#include "compiler/codegen/cuda/host_tool.h"
#include "compiler/codegen/cuda/library_search.h"

namespace tensortune::codegen::cuda {
namespace {

struct NvrtcApi {
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&nvrtcGetPTX) ptx = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) cubin = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
  decltype(&nvrtcGetErrorString) error_string = nullptr;
  decltype(&nvrtcVersion) version = nullptr;
  bool has_cache = false;  ///< NVRTC 12.9+: its compile cache exists (and takes --no-cache)
  std::string error;       ///< why it is not loaded
};

const NvrtcApi& nvrtc() {
  static const NvrtcApi api = [] {
    NvrtcApi a;
    const OpenedLibrary lib = open_cuda_library(
        "TT_NVRTC_LIBRARY", {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}, TT_CUDA_LIB_DIR);
    void* h = lib.handle;
    if (!h) {
      a.error = "NVRTC is not available (set TT_NVRTC_LIBRARY to libnvrtc.so's path; " +
                lib.tried() + ")";
      return a;
    }
    auto load = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, symbol));
      if (!fn && a.error.empty()) a.error = std::string("libnvrtc has no ") + symbol;
    };
    load(a.create, "nvrtcCreateProgram");
    load(a.compile, "nvrtcCompileProgram");
    load(a.log_size, "nvrtcGetProgramLogSize");
    load(a.log, "nvrtcGetProgramLog");
    load(a.ptx_size, "nvrtcGetPTXSize");
    load(a.ptx, "nvrtcGetPTX");
    load(a.cubin_size, "nvrtcGetCUBINSize");
    load(a.cubin, "nvrtcGetCUBIN");
    load(a.destroy, "nvrtcDestroyProgram");
    load(a.error_string, "nvrtcGetErrorString");
    load(a.version, "nvrtcVersion");
    if (a.version) {
      int major = 0, minor = 0;
      a.version(&major, &minor);
      a.has_cache = major > 12 || (major == 12 && minor >= 9);
    }
    return a;
  }();
  return api;
}

Expected<std::string> compile_once(const NvrtcApi& api, const CudaKernelSource& kernel,
                                   const std::string& arch, bool want_cubin, std::string* log) {
  nvrtcProgram prog = nullptr;
  nvrtcResult r =
      api.create(&prog, kernel.source.c_str(), (kernel.entry + ".cu").c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS)
    return internal_error(std::string("nvrtcCreateProgram: ") + api.error_string(r));
  struct Destroy {
    const NvrtcApi& api;
    nvrtcProgram* p;
    ~Destroy() { api.destroy(p); }
  } destroy{api, &prog};
  const std::string arch_option = "--gpu-architecture=" + arch;
  // NVRTC 12.9 and later keep their own cache of compiled code: a hit makes a compile look 20
  // times faster than it is, and tuning figures would mix cold and cached compiles. Kernels are
  // cached by content in the record DB instead (compiler/measure/kernel_build.h), where hits
  // are counted.
  std::vector<const char*> options = {arch_option.c_str(), "--std=c++17"};
  if (api.has_cache) options.push_back("--no-cache");
  r = api.compile(prog, static_cast<int>(options.size()), options.data());
  size_t log_size = 0;
  api.log_size(prog, &log_size);
  log->assign(log_size, '\0');
  if (log_size) api.log(prog, log->data());
  while (!log->empty() && (log->back() == '\0' || log->back() == '\n')) log->pop_back();
  if (r != NVRTC_SUCCESS)
    return internal_error("NVRTC could not compile " + kernel.entry + " for " + arch + ": " +
                          api.error_string(r) + "\n" + *log);
  size_t size = 0;
  std::string out;
  if (want_cubin) {
    api.cubin_size(prog, &size);
    out.resize(size);
    api.cubin(prog, out.data());
  } else {
    api.ptx_size(prog, &size);
    out.resize(size);
    api.ptx(prog, out.data());
    while (!out.empty() && out.back() == '\0') out.pop_back();
  }
  return out;
}

int64_t match_int(const std::string& text, const std::regex& re) {
  std::smatch m;
  return std::regex_search(text, m, re) ? std::stoll(m[1].str()) : 0;
}

}  // namespace

Status nvrtc_available() {
  const NvrtcApi& api = nvrtc();
  if (!api.error.empty()) return unavailable(api.error);
  return ok_status();
}

Expected<std::string> nvrtc_version() {
  const NvrtcApi& api = nvrtc();
  if (!api.error.empty()) return unavailable(api.error);
  int major = 0, minor = 0;
  api.version(&major, &minor);
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
}

Expected<NvrtcOutput> nvrtc_compile(const CudaKernelSource& kernel, int cc, bool cubin) {
  const NvrtcApi& api = nvrtc();
  if (!api.error.empty()) return unavailable(api.error);
  NvrtcOutput out;
  if (cubin) {
    TT_ASSIGN_OR_RETURN(out.cubin,
                        compile_once(api, kernel, "sm_" + std::to_string(cc), true, &out.log));
  } else {
    TT_ASSIGN_OR_RETURN(
        out.ptx, compile_once(api, kernel, "compute_" + std::to_string(cc), false, &out.log));
  }
  return out;
}

Expected<std::string> ptxas_path() {
  const std::string path = std::string(TT_CUDA_BIN_DIR) + "/ptxas";
  if (access(path.c_str(), X_OK) != 0)
    return unavailable("ptxas is not available (looked for " + path + ")");
  return path;
}

Expected<PtxasReport> assemble_ptx(const std::string& ptx, int cc) {
  TT_ASSIGN_OR_RETURN(std::string ptxas, ptxas_path());
  TT_ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::create("tt-ptxas"));
  {
    std::ofstream out(dir / "kernel.ptx");
    out << ptx;
  }
  const ToolRun run = run_tool({ptxas, "-v", "-arch=sm_" + std::to_string(cc), "-o",
                                (dir / "kernel.cubin").string(), (dir / "kernel.ptx").string()},
                               dir / "log.txt");
  PtxasReport report;
  report.log = run.output;
  if (run.exit_code != 0)
    return internal_error("ptxas failed for sm_" + std::to_string(cc) + ":\n" + report.log);
  report.registers = match_int(report.log, std::regex(R"(Used (\d+) registers)"));
  report.shared_bytes = match_int(report.log, std::regex(R"((\d+) bytes smem)"));
  report.spill_stores = match_int(report.log, std::regex(R"((\d+) bytes spill stores)"));
  report.spill_loads = match_int(report.log, std::regex(R"((\d+) bytes spill loads)"));
  return report;
}

}  // namespace tensortune::codegen::cuda
