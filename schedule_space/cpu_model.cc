#include "schedule_space/cpu_model.h"

#include <array>
#include <cstdio>

namespace tensortune::schedule_space {
namespace {

constexpr int64_t kKiB = 1024;

struct KnownCpu {
  std::string_view name;
  int fma_chains;  ///< latency x full-width FMA pipes, for the CPU's widest vector
  int64_t l1d_kib, l2_kib;
  bool amx_int8 = false;
};

// From the vendors' optimisation manuals and uops.info's latency/throughput tables. Where one
// name covers parts with one 512-bit pipe and parts with two (Skylake-SP Silver vs Gold), the
// table says two, and the host's probe corrects it.
constexpr std::array kKnownCpus{
    // AMD
    KnownCpu{"znver1", 5, 32, 512},   // 256-bit FMAs split over 128-bit pipes, 5 cycles
    KnownCpu{"znver2", 10, 32, 512},  // two 256-bit pipes, 5 cycles
    KnownCpu{"znver3", 8, 32, 512},   // two 256-bit pipes, 4 cycles
    KnownCpu{"znver4", 4, 32, 1024},  // 512-bit FMAs through both 256-bit pipes, 4 cycles
    KnownCpu{"znver5", 8, 48, 1024},  // two 512-bit pipes, 4 cycles
    // Intel servers with AVX-512: two 512-bit pipes (ports 0+1 fused, and port 5), 4 cycles; AMX
    // from Sapphire Rapids on
    KnownCpu{"skylake-avx512", 8, 32, 1024},
    KnownCpu{"cascadelake", 8, 32, 1024},
    KnownCpu{"cooperlake", 8, 32, 1024},
    KnownCpu{"icelake-server", 8, 48, 1280},
    KnownCpu{"sapphirerapids", 8, 48, 2048, true},
    KnownCpu{"emeraldrapids", 8, 48, 2048, true},
    KnownCpu{"graniterapids", 8, 48, 2048, true},
    // Intel clients with AVX-512: one 512-bit pipe (ports 0+1 fused), 4 cycles
    KnownCpu{"cannonlake", 4, 32, 256},
    KnownCpu{"icelake-client", 4, 48, 512},
    KnownCpu{"tigerlake", 4, 48, 1280},
    KnownCpu{"rocketlake", 4, 48, 512},
    KnownCpu{"knl", 12, 32, 512},  // two pipes, 6 cycles
    KnownCpu{"knm", 12, 32, 512},
    // Intel with AVX2: two 256-bit pipes
    KnownCpu{"haswell", 10, 32, 256},  // 5 cycles
    KnownCpu{"broadwell", 8, 32, 256},
    KnownCpu{"skylake", 8, 32, 256},
    KnownCpu{"alderlake", 8, 48, 1280},
    KnownCpu{"raptorlake", 8, 48, 2048},
    KnownCpu{"meteorlake", 8, 48, 2048},
    KnownCpu{"arrowlake", 8, 48, 3072},
    // AVX without FMA: a chain of adds, 3 cycles, one pipe
    KnownCpu{"sandybridge", 3, 32, 256},
    KnownCpu{"ivybridge", 3, 32, 256},
};

std::string bytes_text(int64_t bytes) {
  char buf[32];
  if (bytes % (kKiB * kKiB) == 0)
    std::snprintf(buf, sizeof buf, "%lld MiB", static_cast<long long>(bytes / (kKiB * kKiB)));
  else
    std::snprintf(buf, sizeof buf, "%lld KiB", static_cast<long long>(bytes / kKiB));
  return buf;
}

}  // namespace

CpuModel cpu_model_for(std::string_view cpu, int vector_lanes) {
  CpuModel m;
  m.cpu = std::string(cpu.empty() ? "generic" : cpu);
  m.vector_lanes = vector_lanes;
  m.vector_registers = vector_lanes >= 16 ? 32 : 16;
  m.fma_chains = 8;
  m.l1d_bytes = (vector_lanes >= 16 ? 48 : 32) * kKiB;
  m.l2_bytes = (vector_lanes >= 16 ? 1024 : 512) * kKiB;
  for (const KnownCpu& k : kKnownCpus) {
    if (k.name != cpu) continue;
    m.fma_chains = k.fma_chains;
    m.l1d_bytes = k.l1d_kib * kKiB;
    m.l2_bytes = k.l2_kib * kKiB;
    m.amx_int8 = k.amx_int8;
  }
  return m;
}

std::string describe_cpu_model(const CpuModel& m) {
  std::string s = m.cpu + ": " + std::to_string(m.vector_lanes) + " lanes x " +
                  std::to_string(m.vector_registers) + " registers, " +
                  std::to_string(m.fma_chains) + " FMA chains, L1d " + bytes_text(m.l1d_bytes) +
                  ", L2 " + bytes_text(m.l2_bytes);
  if (m.measured_peak_gflops > 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, ", %.0f GFLOPS/core", m.measured_peak_gflops);
    s += buf;
  }
  if (m.amx_int8) s += ", AMX int8";
  return s + " (" + m.source + ")";
}

}  // namespace tensortune::schedule_space
