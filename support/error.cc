#include "support/error.h"

#include <cstdlib>
#include <iostream>

namespace tensortune {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kAlreadyExists:
      return "already exists";
    case ErrorCode::kFailedPrecondition:
      return "failed precondition";
    case ErrorCode::kOutOfRange:
      return "out of range";
    case ErrorCode::kUnimplemented:
      return "unimplemented";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kDataLoss:
      return "data loss";
  }
  return "unknown";
}

}  // namespace tensortune

namespace tensortune::detail {

void value_of_error(const std::string& message) {
  std::cerr << "internal error: value() of an Expected holding an error: " << message << "\n";
  std::abort();
}

CheckFailure::~CheckFailure() {
  std::cerr << stream_.str() << std::endl;
  std::abort();
}

}  // namespace tensortune::detail
