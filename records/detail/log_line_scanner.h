#pragma once
/// \file
/// Private to records/: the fast path of `records import`. A log holds thousands of lines per
/// task that differ only in their config and result; building a JSON DOM of each line and its
/// task again cost more than writing the record. The scanner reads a line with simdjson and
/// returns those fields, plus the line's `input` as minified JSON, the key under which the
/// importer keeps what the validating parser (parse_autotvm_line) made of the first line of a
/// task. Anything unexpected makes it give up (nullopt), and the validating parser, which names
/// the field at fault, reads the line instead: the two accept the same records.

#include <memory>
#include <optional>
#include <string>

#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"

namespace tensortune::records::detail {

struct ScannedLine {
  std::string input_key;  ///< `input` ([target, task_name, args, kwargs]) as minified JSON
  schedule_space::Entity entity;
  int64_t logged_index = 0;
  /// costs, error_no, all_cost_s and timestamp; the rest left at their defaults.
  schedule_space::MeasureResult result;
};

class LogLineScanner {
 public:
  LogLineScanner();
  ~LogLineScanner();
  LogLineScanner(const LogLineScanner&) = delete;
  LogLineScanner& operator=(const LogLineScanner&) = delete;

  /// The line's fields, or nullopt when it is not a well-formed version-0.2 record.
  std::optional<ScannedLine> scan(const std::string& line);

 private:
  struct Parser;  // simdjson's, kept out of this header
  std::unique_ptr<Parser> parser_;
};

}  // namespace tensortune::records::detail
