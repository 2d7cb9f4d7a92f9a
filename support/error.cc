#include "support/error.h"

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
