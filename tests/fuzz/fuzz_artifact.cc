// .tt artifacts (run, bench), one network or one per bucket of sequence lengths: the checksum stops
// random damage at the door, so the fuzzer's bytes get a valid checksum appended to reach the
// parser behind it (a file made to look whole, the case the checksum cannot catch).
#include <openssl/evp.h>

#include <cstdint>
#include <string>

#include "compiler/runtime/artifact.h"
#include "compiler/runtime/ranged_artifact.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  bytes.append(reinterpret_cast<const char*>(digest), length);
  auto n = tensortune::runtime::deserialize_network(bytes, "fuzz.tt");
  (void)n;
  // A ranged artifact (TTRNG001): its plan, then every bucket's network, decoded as run does.
  if (auto ranged = tensortune::runtime::RangedArtifact::parse(bytes, "fuzz.tt"))
    for (size_t i = 0; i < ranged->buckets().size(); ++i) (void)ranged->network(i);
  return 0;
}
