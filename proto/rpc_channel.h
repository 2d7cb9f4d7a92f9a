#pragma once
/// \file
/// Client-side connection set-up shared by device servers and tuning clients: a channel to
/// the tracker (TLS when a CA file is given, the tracker's message-size limit) and the
/// shared token as call metadata.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "support/error.h"

namespace tensortune::wire {

struct TrackerEndpoint {
  std::string address;  ///< HOST:PORT
  std::string token;    ///< empty: none
  std::string tls_ca;   ///< PEM file of the CA that signed the tracker's certificate; empty: plain
  int max_message_bytes = 4 << 20;
};

/// Reads a token file (first line, surrounding whitespace removed); an empty file is an error.
Expected<std::string> read_token_file(const std::string& path);

Expected<std::shared_ptr<grpc::Channel>> make_tracker_channel(const TrackerEndpoint& endpoint);

/// Adds "authorization: Bearer <token>" when the token is not empty.
void add_token(grpc::ClientContext& context, const std::string& token);

/// "UNAUTHENTICATED: wrong token" for messages.
std::string describe(const grpc::Status& status);

}  // namespace tensortune::wire
