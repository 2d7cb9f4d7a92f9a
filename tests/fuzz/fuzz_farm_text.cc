// Text the farm parses by hand: tokens files (name role token quota...), client certificate
// subjects, quota fields and fault-injection specs. Any text gives a value or an error.
#include <cstdint>
#include <string>

#include "device_server/worker_process.h"
#include "tracker/credentials.h"
#include "tracker/quotas.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)tensortune::tracker::parse_tokens(text, "fuzz");
  (void)tensortune::tracker::credential_from_subject(text);
  tensortune::tracker::Quota q;
  (void)tensortune::tracker::parse_quota_field(text, &q);
  (void)tensortune::device_server::parse_fault_injection(text);
  return 0;
}
