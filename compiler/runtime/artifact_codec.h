#pragma once
/// \file
/// Internal to the runtime: the two halves of an artifact's container (artifact.h), for the
/// one-network file and the ranged one (ranged_artifact.h) alike. A container is
///
///   magic (8 bytes)  u64 header length, header (JSON)  u64 blob count, per blob u64 length +
///   bytes  SHA-256 of everything before it (32 bytes)
///
/// and a network is a JSON header whose tensors, object code and kernel sources are blobs by
/// index.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/runtime/compiled_network.h"
#include "support/error.h"

namespace tensortune::runtime {

/// Collects blobs while headers are written. `dedupe`: a blob equal to one already added (by
/// SHA-256) is that one (the buckets of a ranged artifact share their weights).
struct BlobWriter {
  bool dedupe = false;
  std::vector<std::string> blobs;
  std::map<std::string, int> by_digest;
  int add(std::string bytes);
  /// At the dtype's width (int8 weights one byte each), as the executor's buffers hold them.
  int add(const graph::Tensor& t);
};

nlohmann::json encode_network(const CompiledNetwork& network, BlobWriter& blobs);
/// Checks every index and size; a json type error escapes as nlohmann::json::exception.
Expected<CompiledNetwork> decode_network(const nlohmann::json& header,
                                         const std::vector<std::string>& blobs);

std::string frame(const char (&magic)[8], const nlohmann::json& header, const BlobWriter& blobs);
struct Framed {
  std::string header;
  std::vector<std::string> blobs;
};
/// The magic, the checksum and every length checked; kDataLoss naming `what` otherwise.
Expected<Framed> unframe(const std::string& bytes, const char (&magic)[8], const std::string& what);

/// kDataLoss: "`what` is not a valid tensortune artifact: `why`".
Error corrupted(const std::string& what, const std::string& why);

}  // namespace tensortune::runtime
