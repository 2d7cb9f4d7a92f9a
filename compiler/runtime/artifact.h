#pragma once
/// \file
/// The `.tt` artifact: one file holding a CompiledNetwork (object code, optimised graph and
/// parameters, the target CPU and the records used).
///
///   "TTNET001"  u64 header length, header (JSON)  u64 blob count, per blob u64 length + bytes
///   SHA-256 of everything before it (32 bytes)
///
/// Blobs hold the object code and every tensor's raw little-endian elements. Reading checks
/// the magic, the format version and the checksum before parsing, and every index and size
/// after: a truncated or corrupted file is refused with kDataLoss, never half-loaded.
#include <cstdint>
#include <string>

#include "compiler/runtime/compiled_network.h"
#include "support/error.h"

namespace tensortune::runtime {

std::string serialize_network(const CompiledNetwork& network);
/// `what` names the source in errors (a file name).
Expected<CompiledNetwork> deserialize_network(const std::string& bytes, const std::string& what);

Status write_network(const CompiledNetwork& network, const std::string& path);
/// An artifact larger than `max_bytes` is refused unread (kOutOfRange naming the limit; the
/// CLI's --max-artifact-bytes).
inline constexpr int64_t kDefaultMaxArtifactBytes = int64_t{8} << 30;
Expected<CompiledNetwork> read_network(const std::string& path,
                                       int64_t max_bytes = kDefaultMaxArtifactBytes);

/// An artifact's bytes to `path` (through a temporary renamed into place: a crash mid-write
/// never leaves half an artifact under the real name).
Status write_artifact_bytes(const std::string& bytes, const std::string& path);
/// A file's bytes, refused unread above `max_bytes` (kOutOfRange naming the limit).
Expected<std::string> read_artifact_bytes(const std::string& path,
                                          int64_t max_bytes = kDefaultMaxArtifactBytes);

}  // namespace tensortune::runtime
