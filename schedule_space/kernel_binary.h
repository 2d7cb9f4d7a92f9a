#pragma once
/// \file
/// Kernels built apart from where they are timed (AutoTVM's builder and runner): a tuning
/// client or a builder compiles a config on its own cores into a binary for the device
/// (compiler/measure/kernel_build.h), and the device server only loads and times it. A binary
/// is content-addressed: it names the SHA-256 of what it was compiled from (the CUDA C source,
/// or the LLVM IR before optimisation), the compiler, and the architecture; a device makes the
/// same source text from (task, config), which is cheap, and refuses a binary of any other
/// source, so a builder of another tensortune version or a wrong item never gets timed as this
/// config.

#include <string>
#include <vector>

#include "support/error.h"

namespace tensortune::schedule_space {

enum class KernelFormat {
  kCpuObject,  ///< an ELF object for a CPU (compile_kernel_object), its symbol "kernel"
  kCubin,      ///< NVRTC's cubin for one compute capability
};

/// "cpu-object", "cubin".
const char* kernel_format_name(KernelFormat format);

struct KernelBinary {
  KernelFormat format = KernelFormat::kCpuObject;
  std::string arch;  ///< "sm_90" for a cubin; a CPU object: LLVM's CPU name ("znver4")
  /// A CPU object: the features it may use (sorted); a device lacking any refuses it.
  std::vector<std::string> features;
  std::string source_sha256;  ///< hex SHA-256 of the source text it was compiled from
  std::string compiler;       ///< "NVRTC 13.0", "LLVM 14.0.6"
  std::string code;           ///< the binary
  double build_s = 0;         ///< seconds the build took
  std::string built_by;       ///< the credential that sent it (the tracker stamps it)
};

/// Checks a binary sent for (task, config) before anything loads it: its format and
/// architecture are this device's (`device_arch`: "sm_90", or this CPU's name, whose
/// `device_features` must include every feature the object may use) and its source is the
/// source this build makes of the config (`source_sha256`). kInvalidArgument naming the first
/// difference.
Status check_kernel_binary(const KernelBinary& binary, KernelFormat device_format,
                           const std::string& device_arch,
                           const std::vector<std::string>& device_features,
                           const std::string& source_sha256);

}  // namespace tensortune::schedule_space
