// `tensortune gpus`: the GPUs this machine has, as a GPU device server would register them, or
// why it has none (no driver, no device, a build without the CUDA Toolkit).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/cuda_driver.h"
#include "compiler/codegen/cuda/nvrtc.h"
#endif

namespace tensortune::cli {
namespace {

Status list_gpus(bool json) {
#ifdef TT_WITH_CUDA
  auto gpus = codegen::cuda::list_gpus();
  const Status nvrtc = codegen::cuda::nvrtc_available();
  if (json) {
    nlohmann::json j;
    j["nvrtc"] = nvrtc ? "available" : nvrtc.error().message;
    j["gpus"] = nlohmann::json::array();
    if (!gpus) j["reason"] = gpus.error().message;
    for (const auto& g : gpus ? *gpus : std::vector<codegen::cuda::GpuDevice>{})
      j["gpus"].push_back(
          {{"ordinal", g.ordinal},
           {"name", g.name},
           {"key", "cuda-sm" + std::to_string(g.compute_capability)},
           {"sm_count", g.sm_count},
           {"clock_mhz", g.clock_khz / 1000},
           {"memory_bytes", g.memory_bytes},
           {"l2_bytes", g.l2_bytes},
           {"max_threads_per_block", g.limits.max_threads_per_block},
           {"max_shared_bytes_per_block", g.limits.max_shared_bytes_per_block},
           {"max_dynamic_shared_bytes_per_block", g.limits.max_dynamic_shared_bytes_per_block},
           {"max_registers_per_block", g.limits.max_registers_per_block}});
    std::printf("%s\n", j.dump(2).c_str());
    return ok_status();
  }
  std::printf("NVRTC: %s\n", nvrtc ? "available" : nvrtc.error().message.c_str());
  if (!gpus) {
    std::printf("no GPU: %s\n", gpus.error().message.c_str());
    return ok_status();
  }
  std::printf("%-3s %-32s %-10s %5s %6s %8s  %s\n", "#", "name", "key", "SMs", "MHz", "GiB",
              "per block: threads, shared KiB (opted in), registers");
  for (const auto& g : *gpus)
    std::printf("%-3d %-32s %-10s %5d %6d %8.1f  %lld, %lld (%lld), %lld\n", g.ordinal,
                g.name.c_str(), ("cuda-sm" + std::to_string(g.compute_capability)).c_str(),
                g.sm_count, g.clock_khz / 1000, static_cast<double>(g.memory_bytes) / (1 << 30),
                static_cast<long long>(g.limits.max_threads_per_block),
                static_cast<long long>(g.limits.max_shared_bytes_per_block / 1024),
                static_cast<long long>(g.limits.max_dynamic_shared_bytes_per_block / 1024),
                static_cast<long long>(g.limits.max_registers_per_block));
  return ok_status();
#else
  if (json)
    std::printf("{\"gpus\": [], \"reason\": \"built without the CUDA Toolkit\"}\n");
  else
    std::printf(
        "no GPU support in this build (built without the CUDA Toolkit); CUDA kernels "
        "still generate and run with --emulate\n");
  return ok_status();
#endif
}

}  // namespace

void add_gpus_command(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "gpus", "List this machine's GPUs as a GPU device server registers them, or say why none");
  cmd->add_flag("--json", *json, "print JSON");
  cmd->footer(
      "\nThe key column is what `tensortune device --gpus ...` registers and what `--target` "
      "takes.");
  cmd->callback([json, &exit_code] {
    if (Status s = list_gpus(*json); !s) exit_code = report_error(s.error());
  });
}

}  // namespace tensortune::cli
