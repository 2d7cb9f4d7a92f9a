// .tt artifacts (run, bench): the checksum stops random damage at the door, so the fuzzer's
// bytes get a valid checksum appended to reach the parser behind it (a file made to look
// whole, the case the checksum cannot catch).
#include <openssl/evp.h>

#include <cstdint>
#include <string>

#include "compiler/runtime/artifact.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  bytes.append(reinterpret_cast<const char*>(digest), length);
  auto n = tensortune::runtime::deserialize_network(bytes, "fuzz.tt");
  (void)n;
  return 0;
}
