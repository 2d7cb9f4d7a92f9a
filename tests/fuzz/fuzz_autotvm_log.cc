// AutoTVM log lines, the input of `records import`: the validating parser and the fast
// scanner must never crash, and must agree on every line the scanner accepts (the importer
// relies on it: the scanner reads a task's later lines, the parser its first).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "records/autotvm_log.h"
#include "records/detail/log_line_scanner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  auto parsed = tensortune::records::parse_autotvm_line(line, 16);
  static tensortune::records::detail::LogLineScanner scanner;
  auto scanned = scanner.scan(line);
  if (scanned && parsed) {
    // Same config and timing as the validating parser read.
    if (scanned->result.costs != parsed->result.costs ||
        scanned->result.error_no != parsed->result.error_no)
      std::abort();
  }
  return 0;
}
