#include "support/amx_state.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tensortune {
namespace {

bool cpu_has_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & (3u << 24)) == (3u << 24);
}

bool request_tile_data() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

bool process_runs_amx_int8() {
  static const bool runs = cpu_has_amx_int8() && request_tile_data();
  return runs;
}

}  // namespace tensortune
