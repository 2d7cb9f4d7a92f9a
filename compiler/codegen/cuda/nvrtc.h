#pragma once
/// \file
/// CUDA C to PTX and cubin with NVRTC, and PTX to a cubin with the toolkit's ptxas: what
/// compiles GPU kernels, and what checks them where no GPU is. Built only with the CUDA
/// Toolkit (TT_WITH_CUDA); libnvrtc is opened at run time, so the binary starts without it and
/// says so when asked to compile.

#include <cstdint>
#include <string>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "support/error.h"

namespace tensortune::codegen::cuda {

struct NvrtcOutput {
  std::string ptx;    ///< for compute_XY; empty when a cubin was asked for
  std::string cubin;  ///< for sm_XY; empty unless asked for
  std::string log;    ///< NVRTC's messages (warnings on success)
};

/// kUnavailable naming the libraries tried when libnvrtc cannot be opened.
Status nvrtc_available();

/// "NVRTC 13.0": the compiler a built cubin names; kUnavailable as nvrtc_available.
Expected<std::string> nvrtc_version();

/// Compiles the kernel for compute capability `cc` (80 = sm_80): to a cubin for sm_XY when
/// `cubin` (what runs on this machine's GPU; one compilation), else to PTX for compute_XY (what
/// an artifact keeps for GPUs of that capability and newer). kInternal with NVRTC's log when
/// the source does not compile; kUnavailable when NVRTC cannot be loaded. NVRTC's own compile
/// cache (12.9+) is off (`--no-cache`): every call compiles, so compile times are honest.
Expected<NvrtcOutput> nvrtc_compile(const CudaKernelSource& kernel, int cc, bool cubin);

/// What ptxas reports for a kernel it assembled.
struct PtxasReport {
  int64_t registers = 0;
  int64_t shared_bytes = 0;
  int64_t spill_stores = 0, spill_loads = 0;
  std::string log;
};

/// The toolkit's ptxas, or kUnavailable naming where it was looked for.
Expected<std::string> ptxas_path();

/// Assembles PTX for sm_<cc> with `ptxas -v` and reads its resource report.
Expected<PtxasReport> assemble_ptx(const std::string& ptx, int cc);

}  // namespace tensortune::codegen::cuda
