#pragma once
/// \file
/// A kernel model of a CPU: what decides which register tiles and cache blocks its x86
/// templates should offer, and the machine-relative cost features they compute.
///
/// The quantities are those a register-tiled FMA kernel lives by: the vector registers a tile's
/// accumulators, weights and broadcast share (32 zmm with AVX-512, 16 ymm/xmm without); how
/// many independent accumulators keep the FMA pipes busy (latency x full-width pipes: 8 on a
/// core with two 512-bit pipes of four cycles, 4 on Zen 4, whose 512-bit FMAs pass through its
/// 256-bit pipes twice); and the per-core L1 data and L2 sizes that blocking aims at.
///
/// A model comes from a table of the CPUs LLVM names (the target spec's -mcpu), or, for the
/// host, from the table corrected by measurement (codegen::host_target: the FMA probe and the
/// kernel's cache sizes), because a name is not proof: an LLVM older than the CPU names it after
/// the nearest older model, and one name covers parts with one 512-bit pipe and parts with two.
/// The model changes only what tuners propose and the features they learn from: config indices
/// and validity are the template's alone, so records and AutoTVM logs mean the same everywhere.

#include <cstdint>
#include <string>
#include <string_view>

namespace tensortune::schedule_space {

struct CpuModel {
  std::string cpu = "generic";  ///< LLVM's name ("znver4", "icelake-server")
  int vector_lanes = 16;        ///< float32 lanes of the widest vector
  int vector_registers = 32;    ///< of that width
  /// Independent FMA chains that keep the pipes busy: latency (cycles) x full-width FMAs per
  /// cycle. A tile with fewer accumulators leaves the pipes idle while its sums wait.
  int fma_chains = 8;
  int64_t l1d_bytes = 32 * 1024;  ///< per core
  int64_t l2_bytes = 1024 * 1024;
  /// One core's float32 FMA peak in GFLOPS where it was measured; 0 where the model is the
  /// table's.
  double measured_peak_gflops = 0;
  /// AMX's tile unit multiplies uint8 x int8 (`tdpbusd`): int8 kernels run on it, and their
  /// templates offer and default to tiles that suit it. The host's needs Linux's consent too.
  bool amx_int8 = false;
  /// "table" or "measured": where fma_chains and the cache sizes came from.
  std::string source = "table";

  friend bool operator==(const CpuModel&, const CpuModel&) = default;
};

/// The table's model of a CPU LLVM names (`cpu`, as in -mcpu=) whose widest float32 vector has
/// `vector_lanes` lanes (the target's). A name the table does not know gets the width's common
/// case (two full-width pipes of four cycles; 32 registers with AVX-512, 16 without).
CpuModel cpu_model_for(std::string_view cpu, int vector_lanes);

/// "znver4: 16 lanes x 32 registers, 4 FMA chains, L1d 32 KiB, L2 1 MiB (table)" (", AMX int8"
/// before the source where it has the tiles): one line for
/// `tune` and the benches.
std::string describe_cpu_model(const CpuModel& m);

}  // namespace tensortune::schedule_space
