#pragma once
/// \file
/// The pipe protocol between a device server and its worker processes: each message is a
/// 4-byte little-endian length and a serialized protobuf (v1::WorkItem down, v1::MeasureResult
/// up). One request, one answer; a worker measures one config at a time.
#include <google/protobuf/message_lite.h>

#include <string>

#include "support/error.h"

namespace tensortune::device_server {

/// Writes the whole frame; false when the pipe is closed.
bool write_frame(int fd, const google::protobuf::MessageLite& message);

enum class ReadOutcome { kOk, kClosed, kTimedOut, kMalformed };

/// Reads one frame, waiting at most `timeout_s` (< 0: forever).
ReadOutcome read_frame(int fd, google::protobuf::MessageLite* message, double timeout_s);

}  // namespace tensortune::device_server
