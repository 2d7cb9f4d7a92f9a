#include "device_server/peak_flops.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace tensortune::device_server {

double cpu_peak_gflops_per_thread(int vector_lanes, const std::string& cpufreq_root) {
  double max_khz = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cpufreq_root, ec)) {
    std::ifstream in(entry.path() / "cpufreq" / "cpuinfo_max_freq");
    double khz = 0;
    if (in >> khz) max_khz = std::max(max_khz, khz);
  }
  const double ghz = max_khz > 0 ? max_khz / 1e6 : 6.5;
  return std::max(1, vector_lanes) * 2.0 * 2.0 * ghz;
}

double gpu_peak_gflops(const std::vector<v1::GpuInfo>& gpus) {
  double peak = 0;
  for (const v1::GpuInfo& g : gpus)
    peak = std::max(peak, 128.0 * 2.0 * g.sm_count() * g.clock_mhz() / 1e3);
  return peak;
}

}  // namespace tensortune::device_server
