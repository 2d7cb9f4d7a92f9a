// .npy files (op run --data, run --input): any bytes give a tensor or an error naming the file.
#include <cstdint>
#include <string>

#include "support/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto t = tensortune::parse_npy(bytes, "fuzz.npy");
  (void)t;
  return 0;
}
