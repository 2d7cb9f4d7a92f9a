// ONNX models (import, compile --model F.onnx): any bytes give a graph or an error.
#include <cstdint>
#include <string>

#include "compiler/frontend/onnx_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 20)) return 0;  // a model's size is bounded before import
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto g = tensortune::frontend::import_onnx_bytes(bytes, "fuzz.onnx");
  (void)g;
  return 0;
}
