// Workload keys (records best --workload, the archive's rows, compile's record lookup): any
// text gives a task, whose config space then builds, or an error.
#include <cstdint>
#include <string>

#include "records/autotvm_log.h"
#include "schedule_space/config_space.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string key(reinterpret_cast<const char*>(data), size);
  auto task = tensortune::records::task_from_workload_key(key, "llvm -keys=cpu", 16);
  if (task) {
    auto space = tensortune::schedule_space::make_config_space(*task);
    if (space && space->size() > 0) (void)space->config_at(space->size() - 1);
  }
  return 0;
}
