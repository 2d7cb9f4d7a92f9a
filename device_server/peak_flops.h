#pragma once
/// \file
/// The peak a device server states when it registers: an upper bound on the floating-point
/// operations per second one slot can do, so that the tracker can reject timings no hardware
/// could produce (a lying or broken device). It errs high: a bound that is too low would
/// reject honest results, one that is too high only lets through less.
#include <string>
#include <vector>

#include "proto/farm.pb.h"

namespace tensortune::device_server {

/// One CPU thread: `vector_lanes` float32 lanes x 2 FMA units x 2 operations x the highest
/// clock the kernel reports (cpufreq's cpuinfo_max_freq), or 6.5 GHz where it reports none
/// (virtual machines), above every shipping boost clock.
double cpu_peak_gflops_per_thread(int vector_lanes,
                                  const std::string& cpufreq_root = "/sys/devices/system/cpu");

/// One GPU: 128 float32 FMA lanes per SM (the most any architecture has) x 2 x SMs x clock.
/// The largest over the GPUs, so that any slot's results fit under it.
double gpu_peak_gflops(const std::vector<v1::GpuInfo>& gpus);

}  // namespace tensortune::device_server
