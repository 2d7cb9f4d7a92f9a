#pragma once
/// \file
/// The CPU machine code is compiled for: what an artifact and a shipped tuning kernel record,
/// and what a loader checks against the CPU it runs on. LLVM stays behind this header.
#include <string>
#include <vector>

#include "support/error.h"

namespace tensortune::codegen {

struct CpuDescription {
  std::string triple;
  std::string cpu;                    ///< LLVM's name, e.g. "rocketlake"
  std::vector<std::string> features;  ///< the enabled ones, sorted ("avx512f", ...)
  int vector_lanes = 4;
};

CpuDescription host_cpu();

/// The CPU a target spec's `-mcpu=NAME` names, with the features LLVM gives that CPU; the
/// host's own description (its detected features) when the spec names none, or names this CPU
/// and its tasks' `vector_lanes` (0: not known) are the host's. kInvalidArgument naming the CPU
/// when LLVM does not know it for this architecture.
///
/// The lanes tell a CPU newer than this build's LLVM from the older one it shares a name with:
/// LLVM 14 names a Zen 4 (AVX-512) `znver3`, so a `-mcpu=znver3` target of 8 lanes built on a
/// Zen 4 is a Zen 3 (AVX2), not this host.
Expected<CpuDescription> cpu_for_target_spec(const std::string& spec, int vector_lanes = 0);

/// Features `required` enables that `host` lacks (empty: the code runs here).
std::vector<std::string> missing_features(const CpuDescription& required,
                                          const CpuDescription& host);

}  // namespace tensortune::codegen
