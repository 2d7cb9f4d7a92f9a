// Implements host_cpu_model (kernel.h): the table's model of the host's CPU, corrected by what
// this machine measures and reports.
#include <filesystem>
#include <fstream>
#include <string>

#include "compiler/codegen/llvm/cpu_description.h"
#include "compiler/codegen/llvm/int8_amx_tile.h"
#include "compiler/codegen/llvm/kernel.h"
#include "support/fma_peak.h"

namespace tensortune::codegen {

namespace ss = schedule_space;

namespace {

/// "48K" -> 49152 (the kernel's cache sizes); 0 when unreadable.
int64_t size_text_bytes(std::string text) {
  if (text.empty()) return 0;
  int64_t scale = 1;
  if (text.back() == 'K') scale = 1024;
  if (text.back() == 'M') scale = 1024 * 1024;
  if (scale != 1) text.pop_back();
  try {
    return std::stoll(text) * scale;
  } catch (...) {
    return 0;
  }
}

std::string read_word(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string word;
  in >> word;
  return word;
}

/// Per-core L1 data and L2 sizes as the kernel reports them for cpu0; 0 where it does not.
void read_cache_sizes(int64_t& l1d, int64_t& l2) {
  const std::filesystem::path root = "/sys/devices/system/cpu/cpu0/cache";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string level = read_word(entry.path() / "level");
    const std::string type = read_word(entry.path() / "type");
    const int64_t bytes = size_text_bytes(read_word(entry.path() / "size"));
    if (bytes <= 0) continue;
    if (level == "1" && type == "Data") l1d = bytes;
    if (level == "2" && (type == "Unified" || type == "Data")) l2 = bytes;
  }
}

}  // namespace

ss::CpuModel host_cpu_model() {
  static const ss::CpuModel model = [] {
    const CpuDescription host = host_cpu();
    ss::CpuModel m = ss::cpu_model_for(host.cpu, host.vector_lanes);
    int64_t l1d = 0, l2 = 0;
    read_cache_sizes(l1d, l2);
    if (l1d > 0) m.l1d_bytes = l1d;
    if (l2 > 0) m.l2_bytes = l2;
    const FmaChains probe = probe_fma_chains();
    // The probe runs the target's widest vectors; where it could not (no FMA), the table stands.
    if (probe.chains > 0 && probe.vector_bits == 32 * m.vector_lanes) {
      m.fma_chains = probe.chains;
      m.measured_peak_gflops = probe.peak_gflops;
    }
    // The tiles where the CPU has them and this process may use them, whatever LLVM names it
    // (LLVM 14 names some of these servers after a client part).
    m.amx_int8 = emit::host_runs_amx_int8();
    m.source = "measured";
    return m;
  }();
  return model;
}

}  // namespace tensortune::codegen
